"""kind_concurrency: a worker, in either mode, runs at most that many jobs of a kind at once
while its other slots run other kinds, and claims none it could not run (the TypeScript SDK's
kindConcurrency, the Go remote worker's Config.KindConcurrency)."""

from __future__ import annotations

import asyncio
import unittest
from typing import Any

from hopper import AsyncClient, RunningJob, Worker
from hopper.gen import hopper_pb2 as pb

from .support import HopperServer, eventually, queue_name, wait_for_state

server: HopperServer


def setUpModule() -> None:
    global server
    server = HopperServer()


def tearDownModule() -> None:
    server.close()


class Kinds:
    """Counts the running handlers of each kind and the most that ran at once; a kind's
    handlers wait for its gate."""

    def __init__(self, *kinds: str) -> None:
        self.running = {k: 0 for k in kinds}
        self.peak = {k: 0 for k in kinds}
        self.started: dict[str, list[str]] = {k: [] for k in kinds}
        self.gates = {k: asyncio.Event() for k in kinds}

    def handler(self, kind: str) -> Any:
        async def work(job: RunningJob) -> Any:
            self.running[kind] += 1
            self.peak[kind] = max(self.peak[kind], self.running[kind])
            self.started[kind].append(job.id)
            try:
                await self.gates[kind].wait()
            finally:
                self.running[kind] -= 1
            return kind

        return work

    def handlers(self) -> dict[str, Any]:
        return {k: self.handler(k) for k in self.running}

    def is_running(self, **want: int) -> Any:
        async def check() -> bool:
            return all(self.running[k] == n for k, n in want.items())

        return check


def record(w: Worker, strip_stream_caps: bool = False) -> list[Any]:
    """record keeps a copy of each Activate and StreamJobs request w sends; with
    strip_stream_caps the stream's kind_concurrency is left out of what is sent, as a server
    older than the field ignores it."""
    sent: list[Any] = []
    call = w._call

    def spy(method: str, req: Any, timeout: float | None = None) -> Any:
        if method in ("Activate", "StreamJobs"):
            kept = type(req)()
            kept.CopyFrom(req)
            sent.append(kept)
            if method == "StreamJobs" and strip_stream_caps:
                req = type(req)()
                req.CopyFrom(kept)
                req.ClearField("kind_concurrency")
        return call(method, req, timeout)

    setattr(w, "_call", spy)
    return sent


class Base(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.c = AsyncClient(server.url)
        self.q = queue_name(self.id())
        self.workers: list[Worker] = []

    async def asyncTearDown(self) -> None:
        for w in self.workers:
            await w.stop(0)
        await self.c.close()

    def worker(self, handlers: dict[str, Any], **opts: Any) -> Worker:
        w = Worker(server.url, handlers=handlers, queue=self.q, **opts)
        self.workers.append(w)
        return w

    async def running_on_server(self, kind: str) -> int:
        page = await self.c.list(queues=[self.q], states=["running"], kinds=[kind], limit=100)
        return len(page.jobs)


class BoundTest(Base):
    async def test_a_kind_is_bounded_while_the_other_slots_run_other_kinds(self) -> None:
        for mode in ("poll", "stream"):
            with self.subTest(mode=mode):
                self.q = queue_name(f"{self.id()}-{mode}")
                await self.bound(mode)

    async def bound(self, mode: str) -> None:
        k = Kinds("heavy", "light")
        w = self.worker(k.handlers(), mode=mode, concurrency=6, kind_concurrency={"heavy": 2})
        sent = record(w)
        await w.start()
        jobs = await self.c.enqueue_many([("heavy", None, {"queue": self.q})] * 6 + [("light", None, {"queue": self.q})] * 4)
        await eventually(k.is_running(heavy=2, light=4), "2 heavy and 4 light jobs to run")
        self.assertEqual(await self.running_on_server("heavy"), 2, "no heavy job is claimed beyond the kind's room")
        k.gates["heavy"].set()
        k.gates["light"].set()
        for r in jobs:
            j = await wait_for_state(self.c, r.job.id, "completed")
            self.assertEqual((j.attempt, j.rescues), (1, 0))
        self.assertEqual(k.peak["heavy"], 2, "at most 2 heavy jobs at once")
        self.assertEqual(k.peak["light"], 4)
        await w.stop()
        if mode == "stream":
            self.assertEqual(dict(sent[0].kind_concurrency), {"heavy": 2}, "the stream asks the server for the caps")
            return
        for req in sent:
            if "heavy" in req.kinds:
                self.assertLessEqual(req.max_jobs, 2, "a poll naming heavy asks for no more jobs than it has room for")
        left_out = [req for req in sent if "heavy" not in req.kinds]
        self.assertTrue(left_out, "a poll left out the saturated kind")
        for req in left_out:
            wait = req.request_timeout.seconds + req.request_timeout.nanos / 1e9
            self.assertLessEqual(wait, 0.5, "a poll that leaves out a saturated kind waits at most 0.5 s")

    async def test_a_poll_waits_for_a_job_of_its_kind_to_end_when_every_kind_is_saturated(self) -> None:
        k = Kinds("heavy")
        w = self.worker(k.handlers(), mode="poll", concurrency=4, kind_concurrency={"heavy": 1}, poll_wait=1)
        sent = record(w)
        await w.start()
        jobs = await self.c.enqueue_many([("heavy", None, {"queue": self.q})] * 3)
        for n in range(3):
            await eventually(lambda: _true(len(k.started["heavy"]) == n + 1), f"heavy job {n + 1} to start")
            self.assertEqual(await self.running_on_server("heavy"), 1, "one heavy job claimed at a time")
            k.gates["heavy"].set()
            k.gates["heavy"] = asyncio.Event()
            await wait_for_state(self.c, k.started["heavy"][n], "completed")
        self.assertEqual(k.peak["heavy"], 1)
        self.assertTrue(all(list(req.kinds) == ["heavy"] and req.max_jobs == 1 for req in sent), [str(r) for r in sent])
        for r in jobs:
            await wait_for_state(self.c, r.job.id, "completed")

    async def test_a_stream_counts_its_handlers_per_kind_when_the_server_ignores_the_caps(self) -> None:
        # The server ignores kind_concurrency as one older than the field does: the worker's
        # stream request is sent without it. The heavy jobs pushed beyond the kind's room
        # wait in the worker, their leases renewed, until a heavy job ends.
        k = Kinds("heavy", "light")
        w = self.worker(k.handlers(), concurrency=7, kind_concurrency={"heavy": 2, "light": 100}, lease_duration=1.5)
        sent = record(w, strip_stream_caps=True)
        await w.start()
        jobs = await self.c.enqueue_many([("heavy", None, {"queue": self.q})] * 6 + [("light", None, {"queue": self.q})])
        await eventually(k.is_running(heavy=2, light=1), "2 heavy jobs and the light one to run")

        async def all_pushed() -> bool:
            return await self.running_on_server("heavy") == 6

        await eventually(all_pushed, "the server to push every job: it ignores the caps")
        self.assertEqual(dict(sent[0].kind_concurrency), {"heavy": 2, "light": 7}, "a bound above the credit is sent as the credit")
        k.gates["light"].set()
        await wait_for_state(self.c, jobs[6].job.id, "completed")
        self.assertEqual(k.running["heavy"], 2, "the light job's end starts no heavy job: the kind has no room, though slots are free")

        waiting = next(r.job.id for r in jobs[:6] if r.job.id not in k.started["heavy"])
        first = (await self.c.get(waiting)).lease_expires_at

        async def renewed() -> bool:  # past its first lease: renewed while it waits
            j = await self.c.get(waiting)
            return bool(j.state == "running" and j.lease_expires_at and first and (j.lease_expires_at - first).total_seconds() > 1.5)

        await eventually(renewed, "the lease of a waiting heavy job to be renewed past its first lease")
        self.assertEqual(k.running["heavy"], 2)
        k.gates["heavy"].set()
        for r in jobs:
            j = await wait_for_state(self.c, r.job.id, "completed")
            self.assertEqual((j.attempt, j.rescues), (1, 0), "a waiting job's lease was kept")
        self.assertEqual(k.peak["heavy"], 2, "at most 2 heavy jobs at once")


class ValidationTest(unittest.TestCase):
    def test_bad_bounds_are_refused_naming_the_option(self) -> None:
        async def h(job: RunningJob) -> Any:
            return None

        handlers: dict[str, Any] = {"heavy": h}
        many: dict[str, int] = {}
        for i in range(65):
            handlers[f"k{i}"] = h
            many[f"k{i}"] = 1
        url = "http://127.0.0.1:1"
        for mode in ("stream", "poll"):
            for caps, what in [
                ({"other": 1}, "names a kind with no handler"),
                ({"heavy": 0}, "is not a whole number of at least 1"),
                ({"heavy": -1}, "is not a whole number of at least 1"),
                ({"heavy": 1.5}, "is not a whole number of at least 1"),
                ({"heavy": True}, "is not a whole number of at least 1"),
                ({"heavy": "2"}, "is not a whole number of at least 1"),
            ]:
                with self.subTest(mode=mode, caps=caps):
                    with self.assertRaisesRegex(ValueError, r"^hopper: Worker: kind_concurrency\[.*" + what):
                        Worker(url, handlers=handlers, mode=mode, kind_concurrency=caps)  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "kind_concurrency caps 65 kinds; a stream caps at most 64"):
            Worker(url, handlers=handlers, kind_concurrency=many)
        with self.assertRaisesRegex(TypeError, "kind_concurrency"):
            Worker(url, handlers=handlers, kind_concurrency=[("heavy", 1)])  # type: ignore[arg-type]
        Worker(url, handlers=handlers, kind_concurrency={"heavy": 1})  # stream mode takes caps
        Worker(url, handlers=handlers, mode="poll", kind_concurrency=many)  # a poll caps any number
        Worker(url, handlers=handlers, kind_concurrency={})


async def _true(v: bool) -> bool:
    return v


if __name__ == "__main__":
    unittest.main()
