"""Fan-out at run time (docs/workflows.md): a handler adds jobs with job.spawn(), and the jobs
that wait for it wait for those too."""

from __future__ import annotations

import unittest
from typing import Any

from hopper import InvalidArgument, NewJob, RunningJob, SpawnJob, SyncRunningJob

from . import test_worker
from .support import HopperServer, wait_for_state
from .test_worker import Base


def setUpModule() -> None:
    test_worker.server = HopperServer()  # Base's


def tearDownModule() -> None:
    test_worker.server.close()


async def part(job: RunningJob) -> Any:
    return job.args["n"]


async def merge(job: RunningJob) -> Any:
    parents = await job.parent_results()
    return {"sum": sum(p.result or 0 for p in parents), "parents": len(parents)}


class Spawn(Base):
    mode = "stream"

    async def test_a_split_spawns_parts_the_merge_after_it_sums(self) -> None:
        fields: list[str | None] = []
        q = self.q

        async def split(job: RunningJob) -> Any:
            for bad in ([SpawnJob("part", {"n": 1}, {"queue": q}, step="named")],  # not a step of a workflow
                        [NewJob("part", {"n": 1}, {"queue": q}), ("part", {"n": 2}, {"queue": "no spaces"})],
                        [SpawnJob("part", {"n": 1}, {"queue": q}, after_steps=["nope"])]):  # no earlier job is step "nope"
                try:
                    await job.spawn(bad)
                    fields.append("none")
                except InvalidArgument as e:
                    fields.append(e.field)
            parts = [SpawnJob("part", {"n": i + 1}, {"queue": q, "idempotency_key": f"{job.id}-{i}"}) for i in range(job.args["n"])]
            first = await job.spawn(parts)
            again = await job.spawn(parts)  # as a retried attempt would
            assert [(r.job.id, r.existing) for r in again] == [(r.job.id, True) for r in first]
            return 0

        def split_sync(job: SyncRunningJob) -> Any:
            job.spawn([("part", {"n": 10}, {"queue": q})])
            return 0

        await self.worker({"part": part, "split": split, "split-sync": split_sync, "merge": merge}, concurrency=3)
        s = await self.c.enqueue("split", {"n": 3}, queue=q)
        m = await self.c.enqueue("merge", {}, queue=q, after=[s.job.id])
        done = await wait_for_state(self.c, m.job.id, "completed")
        self.assertEqual(done.result, {"sum": 6, "parents": 4})
        self.assertEqual(fields, ["jobs[0].step", "jobs[1].queue", "jobs[0].after_steps[0]"])

        s = await self.c.enqueue("split-sync", {}, queue=q)
        m = await self.c.enqueue("merge", {}, queue=q, after=[s.job.id])
        done = await wait_for_state(self.c, m.job.id, "completed")
        self.assertEqual(done.result, {"sum": 10, "parents": 2})


if __name__ == "__main__":
    unittest.main()
