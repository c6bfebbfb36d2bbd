"""Workflows through WorkflowService (docs/workflows.md, "Workflows"), and batches with a
callback built on them (docs/workflows.md, "Batches with a callback")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .gen import hopper_pb2 as pb
from .job import Job, ParentPolicy, ParentResult, job_spec, step_names, time_of

BATCH_CALLBACK_STEP = "callback"
"""BATCH_CALLBACK_STEP is the step name of a batch's callback; its jobs are job-0, job-1, ..."""


def batch_job_step(i: int) -> str:
    """batch_job_step is the step name of a batch's job i ("job-0", "job-1", ...)."""
    return f"job-{i}"


@dataclass(frozen=True)
class Step:
    """Step is one step of a workflow to enqueue: a name unique in the workflow, its job (kind,
    args, options as enqueue takes them, but not after, idempotency_key or merge_key), the names
    of the steps it runs after, and what a parent's failure does to it (cancel, the default; run;
    skip)."""

    name: str
    kind: str
    args: Any = None
    after: Sequence[str] = ()
    on_parent_failure: ParentPolicy | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchJob:
    """BatchJob is one job of a batch, or its callback: a kind, its args and options."""

    kind: str
    args: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkflowInfo:
    """WorkflowInfo is a stored workflow: its state (running, completed, failed or canceled,
    derived from its steps), its number of steps and their count by state."""

    id: str
    name: str
    state: str
    steps: int
    step_states: dict[str, int]
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None

    @staticmethod
    def from_proto(w: pb.Workflow) -> WorkflowInfo:
        return WorkflowInfo(
            id=w.id, name=w.name, state=w.state, steps=w.steps, step_states=dict(w.step_states),
            created_at=time_of(w, "created_at"), started_at=time_of(w, "started_at"), finished_at=time_of(w, "finished_at"),
        )


@dataclass(frozen=True)
class EnqueuedWorkflow:
    """EnqueuedWorkflow is an enqueued workflow and its steps' jobs, in the order of its steps."""

    workflow: WorkflowInfo
    jobs: list[Job]

    def job(self, step: str) -> Job | None:
        """job returns the job of the step named step, or None."""
        return next((j for j in self.jobs if j.step == step), None)


@dataclass(frozen=True)
class StepStatus:
    """StepStatus is a step of a stored workflow: its job and the steps it runs after."""

    job: Job
    after: list[str]


@dataclass(frozen=True)
class WorkflowDetail:
    workflow: WorkflowInfo
    steps: list[StepStatus]


@dataclass(frozen=True)
class WorkflowPage:
    workflows: list[WorkflowInfo]
    next_cursor: str


@dataclass(frozen=True)
class BatchCounts:
    """BatchCounts is how a batch's jobs ended, as its callback reads them (count_batch):
    results are the jobs in the batch's order, as parent_results reads them."""

    jobs: int
    completed: int
    failed: int
    canceled: int
    results: list[ParentResult]


def count_batch(parents: Sequence[ParentResult]) -> BatchCounts:
    """count_batch counts a batch callback's parents (job.parent_results()) by how they ended."""
    outcomes = [p.outcome for p in parents]
    return BatchCounts(
        jobs=len(parents), completed=outcomes.count("completed"), failed=outcomes.count("failed"),
        canceled=outcomes.count("canceled") + outcomes.count("skipped"), results=list(parents),
    )


def batch_steps(jobs: Iterable[BatchJob], callback: BatchJob) -> list[Step]:
    """batch_steps is the workflow of a batch, as the Go API builds it: its jobs as steps job-0,
    job-1, ..., its callback as step "callback" after all of them with policy run."""
    opts = dict(callback.options)
    policy = opts.pop("on_parent_failure", None)
    if policy not in (None, "run"):
        raise ValueError(f"callback on_parent_failure={policy!r}: a batch's callback runs whatever its jobs did (run)")
    steps = [Step(batch_job_step(i), j.kind, j.args, options=j.options) for i, j in enumerate(jobs)]
    steps.append(Step(BATCH_CALLBACK_STEP, callback.kind, callback.args, after=[s.name for s in steps],
                      on_parent_failure="run", options=opts))
    return steps


def enqueue_request(name: str, steps: Iterable[Step]) -> pb.EnqueueWorkflowRequest:
    out = []
    for s in steps:
        spec = job_spec(s.kind, s.args, **dict(s.options))
        del spec.after[:]
        spec.after.extend(step_names("after", s.after))
        if s.on_parent_failure:
            spec.on_parent_failure = s.on_parent_failure
        out.append(pb.WorkflowStep(name=s.name, job=spec))
    return pb.EnqueueWorkflowRequest(name=name, steps=out)


def list_request(name: str | None, states: Iterable[str] | None, cursor: str | None, limit: int | None,
                 ascending: bool) -> pb.ListWorkflowsRequest:
    return pb.ListWorkflowsRequest(name=name or "", states=list(states or ()), cursor=cursor or "", limit=limit or 0,
                                   ascending=ascending)


def enqueued(r: pb.EnqueueWorkflowResponse) -> EnqueuedWorkflow:
    return EnqueuedWorkflow(WorkflowInfo.from_proto(r.workflow), [Job.from_proto(j) for j in r.jobs])


def detail(r: pb.GetWorkflowResponse) -> WorkflowDetail:
    return WorkflowDetail(WorkflowInfo.from_proto(r.workflow),
                          [StepStatus(Job.from_proto(s.job), list(s.after)) for s in r.steps])


def page(r: pb.ListWorkflowsResponse) -> WorkflowPage:
    return WorkflowPage([WorkflowInfo.from_proto(w) for w in r.workflows], r.next_cursor)


CanceledWorkflow = tuple[WorkflowInfo, list[Job]]
"""CanceledWorkflow is a canceled workflow, as the cancel left it, and the steps' jobs it canceled."""


def canceled(r: pb.CancelWorkflowResponse) -> CanceledWorkflow:
    return WorkflowInfo.from_proto(r.workflow), [Job.from_proto(j) for j in r.canceled]
