"""Batch handlers against a real `hopper serve`, in stream and poll mode: a group's queued jobs
come in one call, each job keeps its own outcome, and a raise fails every job as its own
attempt."""

from __future__ import annotations

import asyncio
import unittest
from typing import Any

from hopper import (
    AsyncClient, Batch, BatchHandlerOptions, InvalidArgument, NewJob, NoRetry, RunningJob, SyncRunningJob, Worker,
)

from .support import HopperServer, eventually, queue_name, wait_for_state

server: HopperServer


def setUpModule() -> None:
    global server
    server = HopperServer()


def tearDownModule() -> None:
    server.close()


class Batches:
    """The batch tests, run in each mode (StreamBatches, PollBatches)."""

    mode: Any

    async def asyncSetUp(self: Any) -> None:
        self.c = AsyncClient(server.url)
        self.q = queue_name(self.id())
        self.workers: list[Worker] = []

    async def asyncTearDown(self: Any) -> None:
        for w in self.workers:
            await w.stop(0)
        await self.c.close()

    async def worker(self: Any, batch_handlers: dict[str, Any], **opts: Any) -> Worker:
        w = Worker(server.url, batch_handlers=batch_handlers, queue=self.q, mode=self.mode, **opts)
        self.workers.append(w)
        await w.start()
        return w

    async def enqueue(self: Any, n: int, **opts: Any) -> list[str]:
        res = await self.c.enqueue_many([NewJob("index", {"n": i}, {"queue": self.q, "group_key": "g1", **opts}) for i in range(n)])
        return [r.job.id for r in res]

    async def test_a_groups_jobs_come_in_one_call_each_with_its_own_outcome(self: Any) -> None:
        ids = await self.enqueue(6)
        calls: list[list[int]] = []

        async def index(b: Batch[RunningJob]) -> None:
            calls.append([j.args["n"] for j in b.jobs])
            for i, j in enumerate(b.jobs):
                if j.args["n"] == 1:
                    b.fail(i, NoRetry("bad doc"))
                if j.args["n"] == 2:
                    b.set_result(i, {"indexed": j.id})

        # A batch is cut to the credit, or the slots, free.
        await self.worker({"index": BatchHandlerOptions(handle=index, max_jobs=10)}, concurrency=8)
        failed = await wait_for_state(self.c, ids[1], "failed")
        self.assertEqual(failed.last_error, "not retryable: bad doc")
        done = await wait_for_state(self.c, ids[2], "completed")
        self.assertEqual(done.result, {"indexed": ids[2]})
        for i in (0, 3, 4, 5):
            await wait_for_state(self.c, ids[i], "completed")
        self.assertEqual(calls, [[0, 1, 2, 3, 4, 5]], "one call for the group's six jobs, in the group's order")
        for id in ids:
            self.assertEqual(len((await self.c.events(id)).attempts), 1, f"job {id}: one attempt")

    async def test_a_raise_fails_every_job_each_as_its_own_attempt(self: Any) -> None:
        ids = await self.enqueue(3, max_attempts=1)
        calls = 0

        def index(b: Batch[SyncRunningJob]) -> None:  # a plain handler, on the worker's threads
            nonlocal calls
            calls += 1
            raise RuntimeError("bulk request failed")

        await self.worker({"index": index})
        for id in ids:
            job = await wait_for_state(self.c, id, "failed")
            self.assertEqual(job.last_error, "RuntimeError: bulk request failed")
            attempts = (await self.c.events(id)).attempts
            self.assertEqual([(a.attempt, a.outcome) for a in attempts], [(1, "error")])
        self.assertEqual(calls, 1)

    async def test_the_batchs_timeout_is_its_shortest_jobs_and_cancels_the_call(self: Any) -> None:
        short = (await self.c.enqueue_many([NewJob("index", {"n": 0}, {"queue": self.q, "group_key": "g1", "max_attempts": 1, "timeout": 0.3})]))[0].job.id
        long = (await self.c.enqueue_many([NewJob("index", {"n": 1}, {"queue": self.q, "group_key": "g1", "max_attempts": 1, "timeout": 60})]))[0].job.id
        timeouts: list[Any] = []

        async def index(b: Batch[RunningJob]) -> None:
            timeouts.extend(j.timeout for j in b.jobs)
            await asyncio.sleep(3600)  # cancelled once every job was told to stop

        await self.worker({"index": index})
        for id in (short, long):
            await wait_for_state(self.c, id, "failed")
            self.assertEqual([a.outcome for a in (await self.c.events(id)).attempts], ["timeout"])
        self.assertEqual(timeouts, [0.3, 0.3])

    async def test_a_max_jobs_the_server_does_not_take_stops_the_worker(self: Any) -> None:
        w = await self.worker({"index": BatchHandlerOptions(handle=lambda b: None, max_jobs=1_000_000)})

        async def stopped() -> bool:
            return w.error is not None

        await eventually(stopped, "the worker to stop")
        self.assertIsInstance(w.error, InvalidArgument)
        self.assertIn("batch_kinds[0].max_jobs", str(w.error))


class StreamBatches(Batches, unittest.IsolatedAsyncioTestCase):
    mode = "stream"


class PollBatches(Batches, unittest.IsolatedAsyncioTestCase):
    mode = "poll"


class BatchOptions(unittest.TestCase):
    def test_a_kind_is_in_handlers_or_batch_handlers_and_batching_is_checked(self) -> None:
        url = "http://127.0.0.1:1"
        with self.assertRaisesRegex(ValueError, r"batch_handlers\['a'\]: the kind has a handler in handlers too"):
            Worker(url, handlers={"a": lambda j: None}, batch_handlers={"a": lambda b: None})
        with self.assertRaisesRegex(ValueError, r"batch_handlers\['a'\]\.max_jobs -1"):
            Worker(url, batch_handlers={"a": BatchHandlerOptions(handle=lambda b: None, max_jobs=-1)})
        with self.assertRaisesRegex(ValueError, r"batch_handlers\['a'\]\.max_wait -1"):
            Worker(url, batch_handlers={"a": BatchHandlerOptions(handle=lambda b: None, max_wait=-1)})
        Worker(url, batch_handlers={"a": lambda b: None}, kind_concurrency={"a": 1})

    def test_fail_and_set_result_name_a_job_of_the_batch(self) -> None:
        b: Batch[int] = Batch([1, 2], lambda: False)
        with self.assertRaises(IndexError):
            b.fail(2, RuntimeError("x"))
        with self.assertRaises(IndexError):
            b.set_result(-1, "x")


if __name__ == "__main__":
    unittest.main()
