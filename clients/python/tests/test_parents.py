"""Results passed along (docs/workflows.md): a fan-in handler reads its parents' results with
job.parent_results(), in both modes, with a call or from its job (fetch_parent_results)."""

from __future__ import annotations

import unittest
from typing import Any

from hopper import NoRetry, ParentResult, RunningJob, SyncRunningJob, Worker

from . import test_worker
from .support import HopperServer, wait_for_state
from .test_worker import Base


def setUpModule() -> None:
    test_worker.server = HopperServer()  # Base's


def tearDownModule() -> None:
    test_worker.server.close()


async def part(job: RunningJob) -> Any:
    if job.args["n"] < 0:
        raise NoRetry("negative")
    return job.args["n"]


def summed(parents: list[ParentResult]) -> dict[str, Any]:
    total, failed = 0, []
    for p in parents:
        assert p.kind == "part" and not p.expired and p.finished_at is not None, p
        if p.outcome == "completed":
            total += p.result
        else:
            failed.append(f"{p.outcome}: {p.error}")
    return {"sum": total, "order": [p.id for p in parents], "failed": failed}


async def sum_async(job: RunningJob) -> Any:
    return summed(await job.parent_results())


def sum_sync(job: SyncRunningJob) -> Any:
    return summed(job.parent_results())


class Parents:
    """The cases, run in each mode, with and without fetch_parent_results."""

    fetch = False

    async def counted(self: Any, handlers: dict[str, Any]) -> list[str]:
        w: Worker = await self.worker(handlers, fetch_parent_results=self.fetch)
        calls: list[str] = []
        call = w._call

        def counting(method: str, req: Any, timeout: float | None = None) -> Any:
            calls.append(method)
            return call(method, req, timeout)

        w._call = counting  # type: ignore[method-assign]
        return calls

    async def test_a_fan_in_sums_its_parents_results(self: Any) -> None:
        for sum_handler in (sum_async, sum_sync):
            with self.subTest(handler=sum_handler.__name__):
                calls = await self.counted({"part": part, "sum": sum_handler})
                parts = [(await self.c.enqueue("part", {"n": n}, queue=self.q)).job.id for n in (5, -1, 7)]
                named = [parts[2], parts[0], parts[1]]
                child = await self.c.enqueue("sum", {}, queue=self.q, after=named, on_parent_failure="run")
                failed = await wait_for_state(self.c, parts[1], "failed")
                done = await wait_for_state(self.c, child.job.id, "completed")
                self.assertEqual(done.result, {"sum": 12, "order": named, "failed": [f"failed: {failed.last_error}"]})
                want = 0 if self.fetch else 1  # none when they came with the job
                self.assertEqual(calls.count("ParentResults"), want)
                for w in self.workers:
                    await w.stop(0)
                self.workers.clear()

    async def test_a_job_without_parents_has_none(self: Any) -> None:
        async def alone(job: RunningJob) -> Any:
            return len(await job.parent_results())

        await self.counted({"alone": alone})
        res = await self.c.enqueue("alone", {}, queue=self.q)
        self.assertEqual((await wait_for_state(self.c, res.job.id, "completed")).result, 0)


class StreamParents(Parents, Base):
    mode = "stream"


class PollParents(Parents, Base):
    mode = "poll"


class StreamFetchedParents(Parents, Base):
    mode = "stream"
    fetch = True


class PollFetchedParents(Parents, Base):
    mode = "poll"
    fetch = True


if __name__ == "__main__":
    unittest.main()
