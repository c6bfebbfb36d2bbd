"""The asyncio worker against a real `hopper serve`, in stream and poll mode."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import unittest
from datetime import timedelta
from typing import Any

from hopper import (
    AsyncClient, BusinessError, HandlerOptions, JobTimeout, LeaseLostError, NoRetry, RetryAfter,
    RunningJob, Shutdown, Snooze, Suspend, SyncRunningJob, Worker, fail_with_checkpoint,
)
from hopper import _rpc
from hopper.text import limits_of
from hopper.gen import hopper_pb2 as pb
from hopper.outcome import CRASHES

from .support import HopperServer, eventually, queue_name, wait_for_state

server: HopperServer


def setUpModule() -> None:
    global server
    server = HopperServer()


def tearDownModule() -> None:
    server.close()


class Base(unittest.IsolatedAsyncioTestCase):
    mode: Any = "stream"

    async def asyncSetUp(self) -> None:
        self.c = AsyncClient(server.url)
        self.q = queue_name(self.id())
        self.workers: list[Worker] = []

    async def asyncTearDown(self) -> None:
        for w in self.workers:
            await w.stop(0)
        await self.c.close()

    async def worker(self, handlers: dict[str, Any], **opts: Any) -> Worker:
        opts.setdefault("mode", self.mode)
        w = Worker(server.url, handlers=handlers, queue=self.q, **opts)
        self.workers.append(w)
        await w.start()
        return w


class Outcomes:
    """The outcome tests, run in each mode (StreamOutcomes, PollOutcomes)."""

    async def test_each_outcome_is_stored(self: Any) -> None:
        seen: dict[str, Any] = {}

        async def ok(job: RunningJob) -> Any:
            return {"double": job.args["n"] * 2}

        async def flaky(job: RunningJob) -> Any:
            if job.attempt == 1:
                raise fail_with_checkpoint(RuntimeError("first try"), {"done": 1})
            seen["checkpoint"] = job.checkpoint
            return "second"

        async def crash(job: RunningJob) -> Any:
            return job.args["missing"]

        async def no_retry(job: RunningJob) -> Any:
            raise NoRetry("give up")

        async def business(job: RunningJob) -> Any:
            raise BusinessError("card_declined", "insufficient funds")

        async def snooze(job: RunningJob) -> Any:
            if job.attempt == 1 and not seen.get("snoozed"):
                seen["snoozed"] = True
                raise Snooze(0.05)
            return "after snooze"

        async def own_cancel(job: RunningJob) -> Any:
            raise asyncio.CancelledError()  # not the worker's: a failed attempt, not a lost job

        async def retry_after(job: RunningJob) -> Any:
            if job.attempt == 1:
                raise RetryAfter(timedelta(milliseconds=50))
            return "retried"

        await self.worker({"ok": ok, "flaky": flaky, "crash": crash, "no_retry": no_retry, "business": business,
                           "snooze": snooze, "retry_after": retry_after, "own_cancel": own_cancel})
        c = self.c
        ids = {k: (await c.enqueue(k, {"n": 21}, queue=self.q, max_attempts=3)).job.id
               for k in ["ok", "flaky", "crash", "no_retry", "business", "snooze", "retry_after"]}
        ids["own_cancel"] = (await c.enqueue("own_cancel", {}, queue=self.q, max_attempts=1)).job.id
        ids["crash"] = (await c.enqueue("crash", {}, queue=self.q, max_attempts=1)).job.id

        j = await wait_for_state(c, ids["ok"], "completed")
        self.assertEqual(j.result, {"double": 42})
        j = await wait_for_state(c, ids["flaky"], "completed")
        self.assertEqual((j.result, j.attempt, seen["checkpoint"]), ("second", 2, {"done": 1}))
        await wait_for_state(c, ids["crash"], "failed")
        a = (await c.events(ids["crash"])).attempts
        self.assertEqual(a[0].outcome, "panic")
        self.assertIn("KeyError", a[0].error)
        self.assertIn("Traceback", a[0].stack)
        j = await wait_for_state(c, ids["no_retry"], "failed")
        self.assertEqual((j.attempt, j.last_error), (1, "not retryable: give up"), "worded as a Go worker words it")
        j = await wait_for_state(c, ids["business"], "failed")
        self.assertEqual((j.attempt, j.last_error_code), (1, "card_declined"))
        j = await wait_for_state(c, ids["snooze"], "completed")
        self.assertEqual((j.result, j.attempt), ("after snooze", 1))  # a snooze spends no attempt
        j = await wait_for_state(c, ids["retry_after"], "completed")
        self.assertEqual((j.result, j.attempt), ("retried", 2))
        j = await wait_for_state(c, ids["own_cancel"], "failed")
        self.assertEqual(j.last_error, "handler canceled")
        self.assertIn(KeyError, CRASHES)

    async def test_suspend_then_resume(self: Any) -> None:
        async def approve(job: RunningJob) -> Any:
            if job.resume_data is None:
                raise Suspend(checkpoint={"step": "wait"})
            return {"approved": job.resume_data["ok"], "from": job.checkpoint["step"]}

        await self.worker({"approve": approve})
        r = await self.c.enqueue("approve", queue=self.q)
        await wait_for_state(self.c, r.job.id, "suspended")
        await self.c.resume(r.job.id, data={"ok": True})
        j = await wait_for_state(self.c, r.job.id, "completed")
        self.assertEqual(j.result, {"approved": True, "from": "wait"})

    async def test_timeout_stops_the_handler(self: Any) -> None:
        reasons: list[Any] = []

        async def slow(job: RunningJob) -> Any:
            try:
                await asyncio.sleep(60)
            finally:
                reasons.append(job.stop_reason)

        await self.worker({"slow": HandlerOptions(slow, timeout=0.2)})
        r = await self.c.enqueue("slow", queue=self.q, max_attempts=1)
        await wait_for_state(self.c, r.job.id, "failed")
        a = (await self.c.events(r.job.id)).attempts
        self.assertEqual((a[0].outcome, a[0].error), ("timeout", "job execution timeout after 200ms"))
        self.assertIsInstance(reasons[0], JobTimeout)

    async def test_plain_handlers_run_on_the_workers_own_threads(self: Any) -> None:
        threads: list[str] = []

        def blocking(job: SyncRunningJob) -> Any:
            threads.append(threading.current_thread().name)
            job.progress(30, "blocking")
            return job.args

        w = await self.worker({"blocking": blocking}, name="pyw", concurrency=2)
        r = await self.c.enqueue("blocking", {"a": 1}, queue=self.q)
        j = await wait_for_state(self.c, r.job.id, "completed")
        self.assertEqual((j.result, j.progress_percent), ({"a": 1}, 30))
        self.assertTrue(threads[0].startswith("hopper-pyw"), threads)
        self.assertEqual(w.running, 0)

    async def test_progress_is_stored_while_running(self: Any) -> None:
        go = asyncio.Event()

        async def report(job: RunningJob) -> Any:
            await job.progress(40, "copying")
            await go.wait()

        await self.worker({"report": report})
        r = await self.c.enqueue("report", queue=self.q)

        async def shown() -> bool:
            j = await self.c.get(r.job.id)
            return bool(j.progress_percent == 40 and j.progress_message == "copying")

        await eventually(shown, "progress 40 copying")
        go.set()
        await wait_for_state(self.c, r.job.id, "completed")

    async def test_leases_are_kept_for_jobs_longer_than_a_lease(self: Any) -> None:
        go = asyncio.Event()

        async def long(job: RunningJob) -> Any:
            await go.wait()
            return "done"

        await self.worker({"long": long}, lease_duration=1.5)
        r = await self.c.enqueue("long", queue=self.q)
        first = (await wait_for_state(self.c, r.job.id, "running")).lease_expires_at

        async def renewed() -> bool:  # twice: the keeper renews on its beat, not once
            j = await self.c.get(r.job.id)
            return bool(j.lease_expires_at and first and (j.lease_expires_at - first).total_seconds() > 1.5)

        await eventually(renewed, "the lease to be renewed twice")
        go.set()
        j = await wait_for_state(self.c, r.job.id, "completed", timeout=20)
        self.assertEqual((j.result, j.attempt, j.rescues), ("done", 1, 0))

    async def test_cancel_stops_a_running_handler(self: Any) -> None:
        started = asyncio.Event()
        reasons: list[Any] = []

        async def forever(job: RunningJob) -> Any:
            started.set()
            try:
                await asyncio.sleep(3600)
            finally:
                reasons.append(job.stop_reason)

        w = await self.worker({"forever": forever}, lease_duration=1.5)
        r = await self.c.enqueue("forever", queue=self.q)
        await asyncio.wait_for(started.wait(), 10)
        await self.c.cancel(r.job.id, reason="operator")

        async def stopped() -> bool:
            return bool(reasons) and w.running == 0

        await eventually(stopped, "the handler to be stopped")
        self.assertIsInstance(reasons[0], LeaseLostError)
        self.assertEqual((await self.c.get(r.job.id)).state, "canceled")

    async def test_stop_drains_running_jobs(self: Any) -> None:
        started = asyncio.Event()

        async def short(job: RunningJob) -> Any:
            started.set()
            await asyncio.sleep(0.3)
            return "drained"

        w = await self.worker({"short": short})
        r = await self.c.enqueue("short", queue=self.q)
        await asyncio.wait_for(started.wait(), 10)
        await w.stop()
        j = await self.c.get(r.job.id)
        self.assertEqual((j.state, j.result), ("completed", "drained"))

    async def test_stop_after_its_grace_gives_the_job_back(self: Any) -> None:
        started = asyncio.Event()
        reasons: list[Any] = []

        async def stuck(job: RunningJob) -> Any:
            started.set()
            try:
                await asyncio.sleep(3600)
            finally:
                reasons.append(job.stop_reason)

        w = await self.worker({"stuck": stuck})
        r = await self.c.enqueue("stuck", queue=self.q)
        await asyncio.wait_for(started.wait(), 10)
        await w.stop(0.1)
        self.assertIsInstance(reasons[0], Shutdown)
        j = await self.c.get(r.job.id)
        self.assertEqual(j.state, "queued")

    async def test_limits_are_read_from_the_server(self: Any) -> None:
        async def ok(job: RunningJob) -> Any:
            return None

        w = await self.worker({"ok": ok})
        r = await self.c.enqueue("ok", queue=self.q)
        await wait_for_state(self.c, r.job.id, "completed")
        served = (await self.c.server_info()).input_limits
        self.assertEqual(w._limits, limits_of(served, server.url))  # what the server said, all of it
        self.assertEqual(w._limits.error_bytes, served.max_error_bytes)


class Governed:
    """The resource governor, in each mode: over its limit the worker takes no job (the server
    hears of the hold), under it again it does."""

    async def test_the_governor_holds_new_jobs(self: Any) -> None:
        async def ok(job: RunningJob) -> Any:
            return "ran"

        use = [0.0, 2000]  # CPU, memory: over max_memory

        w = Worker(server.url, handlers={"ok": ok}, queue=self.q, mode=self.mode, name=f"gov-{self.q}", max_memory=1000)
        w._gov_reader = lambda: (use[0], int(use[1]))
        w._gov_interval = 0.02
        self.workers.append(w)
        await w.start()
        admin = _rpc.Service(self.c._channel, "AdminService")

        async def held() -> bool:
            res = await admin["ListWorkers"](pb.ListWorkersRequest())
            return any(x.name == w.name and x.held for x in res.workers)

        await eventually(held, "the server to hear of the hold")
        r = await self.c.enqueue("ok", queue=self.q)
        await asyncio.sleep(0.5)  # room for a wrong claim
        self.assertEqual((await self.c.get(r.job.id)).state, "queued")
        use[1] = 0
        j = await wait_for_state(self.c, r.job.id, "completed")
        self.assertEqual(j.result, "ran")
        self.assertFalse(await held())


class StreamOutcomes(Outcomes, Governed, Base):
    mode = "stream"

    async def test_prefetch_never_runs_more_than_the_concurrency(self) -> None:
        running = 0
        most = 0

        async def count(job: RunningJob) -> Any:
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.02)
            running -= 1

        await self.worker({"count": count}, concurrency=2, prefetch=3)
        ids = [r.job.id for r in await self.c.enqueue_many([("count", None, {"queue": self.q})] * 12)]
        for i in ids:
            await wait_for_state(self.c, i, "completed")
        self.assertEqual(most, 2)

    async def test_sigterm_drains_and_stops_run(self) -> None:
        started = asyncio.Event()

        async def short(job: RunningJob) -> Any:
            started.set()
            await asyncio.sleep(0.3)
            return "drained"

        w = Worker(server.url, handlers={"short": short}, queue=self.q)
        run = asyncio.ensure_future(w.run())
        r = await self.c.enqueue("short", queue=self.q)
        await asyncio.wait_for(started.wait(), 10)
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(run, 20)
        j = await self.c.get(r.job.id)
        self.assertEqual((j.state, j.result), ("completed", "drained"))


class PollOutcomes(Outcomes, Governed, Base):
    mode = "poll"


class OutageTest(unittest.IsolatedAsyncioTestCase):
    """A server killed and restarted under long jobs that report progress: one attempt each,
    progress kept, every job completed."""

    async def test_jobs_survive_a_server_restart(self) -> None:
        for mode in ("stream", "poll"):
            with self.subTest(mode=mode):
                await self.outage(mode)

    async def outage(self, mode: Any) -> None:
        s = HopperServer()
        self.addCleanup(s.close)
        started = 0
        all_started = asyncio.Event()
        killed = asyncio.Event()
        restarted = asyncio.Event()
        kept = 0

        async def long(job: RunningJob) -> Any:
            nonlocal started, kept
            started += 1
            if started == 3:
                all_started.set()
            await killed.wait()
            await job.progress(60, "during the outage")  # kept: the server is down
            kept += 1
            await restarted.wait()
            await asyncio.sleep(0.2)
            return job.args

        returned = 0

        async def quick(job: RunningJob) -> Any:
            nonlocal returned
            await killed.wait()
            returned += 1
            return job.args  # its outcome is reported once the server is back

        async with AsyncClient(s.url) as c:
            ids = [(await c.enqueue("long", i, max_attempts=1)).job.id for i in range(3)]
            quick_ids = [(await c.enqueue("quick", i, max_attempts=1)).job.id for i in range(2)]
            w = Worker(s.url, handlers={"long": long, "quick": quick}, mode=mode, concurrency=5, lease_duration=5)
            await w.start()
            try:
                await asyncio.wait_for(all_started.wait(), 10)
                s.kill()
                killed.set()
                await eventually(lambda: _true(kept == 3 and returned == 2), "progress and outcomes during the outage")
                await asyncio.sleep(0.3)  # the outcomes' first tries fail
                s.restart()
                restarted.set()
                for i, id in enumerate(ids):
                    j = await wait_for_state(c, id, "completed", timeout=30)
                    self.assertEqual((j.result, j.attempt, j.rescues, j.progress_percent), (i, 1, 0, 60))
                for i, id in enumerate(quick_ids):
                    j = await wait_for_state(c, id, "completed", timeout=30)
                    self.assertEqual((j.result, j.attempt, j.rescues), (i, 1, 0))
            finally:
                await w.stop(0)


class RevokedKeyTest(unittest.IsolatedAsyncioTestCase):
    """A worker whose key is revoked stops taking jobs and says why (worker.error)."""

    async def test_a_revoked_key_stops_the_worker(self) -> None:
        for mode in ("stream", "poll"):
            with self.subTest(mode=mode):
                s = HopperServer(api_key=True)
                self.addCleanup(s.close)

                async def ok(job: RunningJob) -> Any:
                    return "ok"

                async with AsyncClient(s.url, api_key=s.api_key) as c:
                    w = Worker(s.url, api_key=s.api_key, handlers={"ok": ok}, mode=mode, lease_duration=1.5, poll_wait=1)
                    await w.start()
                    try:
                        r = await c.enqueue("ok")
                        await wait_for_state(c, r.job.id, "completed")
                        s.cli("keys", "revoke", "sdk-test")

                        async def stopped() -> bool:
                            return w.error is not None

                        await eventually(stopped, "the worker to stop on its revoked key", timeout=20)
                        self.assertIn(w.error.code if w.error else "", ("unauthenticated", "permission_denied"))
                    finally:
                        await w.stop(0)


async def _true(v: bool) -> bool:
    return v


if __name__ == "__main__":
    unittest.main()
