"""Jobs as the server stores them, and the messages that describe new ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Literal, Mapping, Sequence

from ._json import decode_json, encode_json
from .gen import hopper_pb2 as pb
from .handler_errors import seconds

__all__ = ["Job", "JobEvent", "JobAttempt", "ParentResult", "RetryPolicy", "NewJob", "SpawnJob", "Duration", "Merge"]

Duration = float | timedelta
"""Duration is a timedelta, or a number of seconds."""

Merge = Literal["keep", "replace", "append"]


@dataclass(frozen=True)
class RetryPolicy:
    """RetryPolicy shapes the backoff between failed attempts: min(cap, base·multiplierⁿ⁻¹) ±
    jitter. Unset fields take the next level's: the job's own first, then its kind's (a
    worker handler's), then the server's default. retry_business_errors retries a
    BusinessError like any error while attempts are left."""

    base: Duration | None = None
    multiplier: float | None = None
    cap: Duration | None = None
    jitter: float | None = None
    retry_business_errors: bool = False

    def to_proto(self) -> pb.RetryPolicy:
        p = pb.RetryPolicy(retry_business_errors=self.retry_business_errors)
        if self.base is not None:
            set_duration(p.base, self.base)
        if self.cap is not None:
            set_duration(p.cap, self.cap)
        if self.multiplier is not None:
            p.multiplier = self.multiplier
        if self.jitter is not None:
            p.jitter = self.jitter
        return p


def set_duration(d: Any, v: Duration) -> None:
    d.FromNanoseconds(int(round(seconds(v) * 1e9)))


def set_time(t: Any, v: datetime) -> None:
    t.FromNanoseconds(int(round(v.timestamp() * 1e9)))


def time_of(msg: Any, name: str) -> datetime | None:
    if not msg.HasField(name):
        return None
    ts = getattr(msg, name)
    return datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, timezone.utc)


def seconds_of(msg: Any, name: str) -> float | None:
    if not msg.HasField(name):
        return None
    d = getattr(msg, name)
    return float(d.seconds + d.nanos / 1e9)


@dataclass(frozen=True)
class NewJob:
    """NewJob is one job of enqueue_many: a kind, its args (any JSON value; None is {}) and its
    options, as enqueue takes them."""

    kind: str
    args: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SpawnJob:
    """SpawnJob is one job of RunningJob.spawn: a kind, its args and options as NewJob's (no
    merge_key), and its step name in the running job's workflow (letters, digits, '_', '-', '.',
    ':', at most 128; None: the server names it; only for a job that is a step of a workflow).
    after_steps names, by their step, jobs earlier in the same spawn that this one runs after
    (their ids are not known before the call), after those of options' after; a name no earlier
    job of the call has is refused (InvalidArgument naming jobs[i].after_steps[k])."""

    kind: str
    args: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    step: str | None = None
    after_steps: Sequence[str] = ()


def step_names(field: str, names: Iterable[str] | None) -> list[str]:
    """step_names is names (of jobs' ids or steps) as a list. A str alone is refused with a TypeError
    naming field: list() would split it into its letters, one name each."""
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{field} takes a list of names, not the string {names!r}: write [{names!r}]")
    return list(names or ())


ParentPolicy = Literal["cancel", "run", "skip"]
"""ParentPolicy is what a parent's failure or cancel does to a job enqueued with after: cancel it (the
default; its own children follow their policies), run it anyway once every parent has ended, or skip
it (it ends canceled but counts as succeeded for its own children)."""


def job_spec(
    kind: str,
    args: Any = None,
    *,
    queue: str | None = None,
    priority: int | None = None,
    run_at: datetime | None = None,
    delay: Duration | None = None,
    max_attempts: int | None = None,
    timeout: Duration | None = None,
    headers: Mapping[str, str] | None = None,
    idempotency_key: str | None = None,
    idempotency_retention: Duration | None = None,
    group_key: str | None = None,
    retry_policy: RetryPolicy | None = None,
    max_rescues: int | None = None,
    merge_key: str | None = None,
    merge: Merge | None = None,
    fairness_key: str | None = None,
    after: Sequence[str] | None = None,
    on_parent_failure: ParentPolicy | None = None,
) -> pb.JobSpec:
    """job_spec is the JobSpec of a job of kind with args and options (see Client.enqueue)."""
    s = pb.JobSpec(kind=kind, args=encode_json(args))
    if queue is not None:
        s.queue = queue
    if priority is not None:
        s.priority = priority
    if run_at is not None:
        set_time(s.run_at, run_at)
    if delay is not None:
        set_duration(s.delay, delay)
    if max_attempts is not None:
        s.max_attempts = max_attempts
    if timeout is not None:
        set_duration(s.timeout, timeout)
    if headers:
        s.headers.update(headers)
    if idempotency_key is not None:
        s.idempotency_key = idempotency_key
    if idempotency_retention is not None:
        set_duration(s.idempotency_retention, idempotency_retention)
    if group_key is not None:
        s.group_key = group_key
    if retry_policy is not None:
        s.retry_policy.CopyFrom(retry_policy.to_proto())
    if max_rescues is not None:
        s.max_rescues = max_rescues
    if merge_key is not None:
        s.merge_key = merge_key
    if merge is not None:
        s.merge = merge
    if fairness_key is not None:
        s.fairness_key = fairness_key
    if after:
        s.after.extend(step_names("after", after))
    if on_parent_failure is not None:
        s.on_parent_failure = on_parent_failure
    return s



JobState = Literal["waiting", "scheduled", "queued", "running", "suspended", "completed", "failed", "canceled"]


@dataclass(frozen=True)
class Job:
    """Job is a job as stored. args, result, checkpoint and resume_data are the JSON values they
    were given as (None when unset); times are aware datetimes (UTC), durations seconds."""

    id: str
    kind: str
    queue: str
    priority: int
    args: Any
    headers: dict[str, str]
    state: str
    attempt: int
    max_attempts: int
    lease_token: int
    run_at: datetime | None
    timeout: float | None
    worker_id: str
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    progress_percent: int
    progress_message: str
    result: Any
    last_error: str
    last_error_code: str
    idempotency_key: str
    group_key: str
    merge_key: str
    fairness_key: str
    original_id: str
    replay_count: int
    replayed_by: str
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime | None
    expires_at: datetime | None
    stalled: bool
    checkpoint: Any
    deadline_at: datetime | None
    resume_data: Any
    rescues: int
    max_rescues: int
    has_children: bool = False
    # workflow_id is the workflow the job is a step of, step its step's name; "" for a job on its own.
    workflow_id: str = ""
    step: str = ""

    @staticmethod
    def from_proto(j: pb.Job) -> Job:
        return Job(
            id=j.id, kind=j.kind, queue=j.queue, priority=j.priority, args=decode_json(j.args),
            headers=dict(j.headers), state=j.state, attempt=j.attempt, max_attempts=j.max_attempts,
            lease_token=j.lease_token, run_at=time_of(j, "run_at"), timeout=seconds_of(j, "timeout"),
            worker_id=j.worker_id, lease_expires_at=time_of(j, "lease_expires_at"),
            heartbeat_at=time_of(j, "heartbeat_at"), progress_percent=j.progress_percent,
            progress_message=j.progress_message, result=decode_json(j.result), last_error=j.last_error,
            last_error_code=j.last_error_code, idempotency_key=j.idempotency_key, group_key=j.group_key,
            merge_key=j.merge_key, fairness_key=j.fairness_key, original_id=j.original_id,
            replay_count=j.replay_count, replayed_by=j.replayed_by, created_at=time_of(j, "created_at"),
            started_at=time_of(j, "started_at"), finished_at=time_of(j, "finished_at"),
            updated_at=time_of(j, "updated_at"), expires_at=time_of(j, "expires_at"), stalled=j.stalled,
            checkpoint=decode_json(j.checkpoint), deadline_at=time_of(j, "deadline_at"),
            resume_data=decode_json(j.resume_data), rescues=j.rescues, max_rescues=j.max_rescues,
            has_children=j.has_children, workflow_id=j.workflow_id, step=j.step,
        )


@dataclass(frozen=True)
class JobEvent:
    """JobEvent is one state transition of a job (from_state is "" for the creating event)."""

    seq: int
    at: datetime | None
    from_state: str
    to_state: str
    actor: str
    reason: str


@dataclass(frozen=True)
class JobAttempt:
    """JobAttempt is one ended attempt: outcome is ok, error, timeout, panic, lease_expired or canceled."""

    lease_token: int
    attempt: int
    worker_id: str
    started_at: datetime | None
    ended_at: datetime | None
    outcome: str
    error: str
    stack: str
    error_code: str


@dataclass(frozen=True)
class ParentResult:
    """ParentResult is one parent of a running job (after=): how it ended and what it left
    (docs/workflows.md, "Results passed along"). outcome is "completed", "failed", "canceled" or
    "skipped" (its own skip policy canceled it: it counts as succeeded), "" for a parent that has
    not ended; state is its state now (its outcome's final state, unless it was retried in place
    since). result is the JSON value it completed with, None when it stored none, did not
    complete, or expired: its retention ran out before the read, and only id and outcome are
    known. step is the parent's step name when it is a step of a workflow ("" outside one, and
    when expired)."""

    id: str
    kind: str
    outcome: str
    state: str
    result: Any
    error: str
    finished_at: datetime | None
    expired: bool
    step: str = ""

    @staticmethod
    def from_proto(p: pb.ParentResult) -> "ParentResult":
        return ParentResult(
            id=p.id, kind=p.kind, outcome=p.outcome, state=p.state, result=decode_json(p.result), error=p.error,
            finished_at=time_of(p, "finished_at"), expired=p.expired, step=p.step,
        )


def event_from_proto(e: pb.Event) -> JobEvent:
    return JobEvent(e.seq, time_of(e, "at"), getattr(e, "from"), e.to, e.actor, e.reason)


def attempt_from_proto(a: pb.Attempt) -> JobAttempt:
    return JobAttempt(
        a.lease_token, a.attempt, a.worker_id, time_of(a, "started_at"), time_of(a, "ended_at"), a.outcome,
        a.error, a.stack, a.error_code,
    )
