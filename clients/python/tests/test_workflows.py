"""The clients' workflow methods against a real `hopper serve` (docs/workflows.md, "Workflows"),
and a batch with a callback built on them (docs/workflows.md, "Batches with a callback")."""

from __future__ import annotations

import unittest
from typing import Any

from hopper import (
    BATCH_CALLBACK_STEP, BatchJob, Client, FailedPrecondition, InvalidArgument, NoRetry, NotFound, RunningJob, Step,
    batch_job_step, count_batch,
)

from . import test_worker
from .support import HopperServer, queue_name, wait_for_state
from .test_worker import Base


def setUpModule() -> None:
    test_worker.server = HopperServer()  # Base's


def tearDownModule() -> None:
    test_worker.server.close()


class Workflows(Base):
    def test_enqueue_get_list_and_cancel(self) -> None:
        with Client(test_worker.server.url) as c:
            q = queue_name(self.id())
            name = f"publish-{q}"
            res = c.enqueue_workflow(name, [
                Step("publish", "publish", {"album": 7}, after=["resize"], on_parent_failure="run", options={"queue": q}),
                Step("resize", "resize", {"size": 320}, options={"queue": q, "timeout": 30}),
            ])
            self.assertEqual(res.workflow.name, name)
            self.assertEqual(res.workflow.state, "running")
            self.assertEqual([j.step for j in res.jobs], ["publish", "resize"])
            self.assertEqual([j.state for j in res.jobs], ["waiting", "queued"])
            self.assertTrue(all(j.workflow_id == res.workflow.id for j in res.jobs))
            self.assertEqual(res.job("resize").kind, "resize")  # type: ignore[union-attr]

            d = c.get_workflow(res.workflow.id)
            self.assertEqual([s.job.step for s in d.steps], ["resize", "publish"])
            self.assertEqual(d.steps[1].after, ["resize"])
            self.assertEqual(d.workflow.step_states, {"queued": 1, "waiting": 1})

            page = c.list_workflows(name=name, states=["running"])
            self.assertEqual([w.id for w in page.workflows], [res.workflow.id])
            self.assertEqual(page.next_cursor, "")

            wf, canceled = c.cancel_workflow(res.workflow.id, reason="album withdrawn")
            self.assertEqual(wf.state, "canceled")
            self.assertEqual(len(canceled), 2)
            with self.assertRaises(FailedPrecondition):
                c.cancel_workflow(res.workflow.id)
            with self.assertRaises(NotFound):
                c.get_workflow("01a20000-0000-7000-8000-000000000000")
            with self.assertRaises(InvalidArgument) as bad:
                c.enqueue_workflow(name, [Step("a", "k", after=["nope"])])
            self.assertIn("steps[0].job.after[0]", str(bad.exception))

    async def test_a_batch_callback_runs_once_all_ended_and_counts_them(self) -> None:
        async def send(job: RunningJob) -> Any:
            if job.args["to"] == "bounce":
                raise NoRetry("mailbox full")
            return f"sent to {job.args['to']}"

        async def tally(job: RunningJob) -> Any:
            counts = count_batch(await job.parent_results())
            return {"jobs": counts.jobs, "completed": counts.completed, "failed": counts.failed,
                    "first": counts.results[0].result}

        await self.worker({"send": send, "tally": tally})
        res = await self.c.enqueue_batch("newsletter", [BatchJob("send", {"to": to}, {"queue": self.q})
                                                        for to in ("ann", "bounce", "bob")],
                                         BatchJob("tally", options={"queue": self.q}))
        self.assertEqual([j.step for j in res.jobs], [batch_job_step(0), batch_job_step(1), batch_job_step(2), BATCH_CALLBACK_STEP])
        cb = res.job(BATCH_CALLBACK_STEP)
        assert cb is not None
        self.assertEqual(cb.state, "waiting")
        done = await wait_for_state(self.c, cb.id, "completed")
        self.assertEqual(done.result, {"jobs": 3, "completed": 2, "failed": 1, "first": "sent to ann"})
        self.assertEqual((await self.c.get_workflow(res.workflow.id)).workflow.state, "failed")
        with self.assertRaises(ValueError):
            await self.c.enqueue_batch("b", [BatchJob("send")], BatchJob("tally", options={"on_parent_failure": "skip"}))


if __name__ == "__main__":
    unittest.main()
