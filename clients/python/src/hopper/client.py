"""Enqueue, inspect, cancel, resume, retry and replay jobs: Client (blocking) and AsyncClient (asyncio)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import grpc
import grpc.aio

from . import _rpc
from ._json import encode_json
from . import workflow as _wf
from .errors import to_hopper_error
from .gen import hopper_pb2 as pb
from .job import (
    Duration, Job, JobAttempt, JobEvent, Merge, NewJob, ParentPolicy, RetryPolicy, SpawnJob, attempt_from_proto, event_from_proto,
    job_spec,
    seconds_of, step_names, set_time, time_of,
)

__all__ = [
    "Client", "AsyncClient", "EnqueueResult", "Page", "History", "DeadLetterPage", "ReplaySummary", "Replayed",
    "Retried", "DeadLetterStats",
]

T = TypeVar("T")


@dataclass(frozen=True)
class EnqueueResult:
    """EnqueueResult is a stored job; existing: an idempotency key returned a job stored before;
    merged: a merge key merged the enqueue into a waiting job (job is that job)."""

    job: Job
    existing: bool
    merged: bool


@dataclass(frozen=True)
class Page:
    """Page is a page of jobs; next_cursor is "" on the last page."""

    jobs: list[Job]
    next_cursor: str


@dataclass(frozen=True)
class History:
    """History is a job's state transitions and its ended attempts."""

    events: list[JobEvent]
    attempts: list[JobAttempt]


@dataclass(frozen=True)
class ReplaySummary:
    count: int
    last_job_id: str
    last_replayed_at: datetime | None


@dataclass(frozen=True)
class DeadLetterPage:
    """DeadLetterPage is a page of dead letters; replays marks the replayed ones, by job id."""

    jobs: list[Job]
    next_cursor: str
    replays: dict[str, ReplaySummary]


@dataclass(frozen=True)
class DeadLetterStats:
    count: int
    oldest_failed_at: datetime | None
    oldest_age: float | None
    replayed: int


@dataclass(frozen=True)
class Replayed:
    """Replayed is what a replay made: the new jobs, whom it is recorded as done by, and how many
    dead letters matching the filter were skipped as replayed before."""

    jobs: list[Job]
    replayed_by: str
    skipped: int


@dataclass(frozen=True)
class Retried:
    jobs: list[Job]
    retried_by: str
    skipped: int


# The requests, built once for both clients.


def _enqueue_request(kind: str, args: Any, opts: dict[str, Any]) -> pb.EnqueueRequest:
    return pb.EnqueueRequest(job=job_spec(kind, args, **opts))


def _batch_request(jobs: Iterable[NewJob | tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]]) -> pb.EnqueueBatchRequest:
    specs = []
    for j in jobs:
        if isinstance(j, NewJob):
            specs.append(job_spec(j.kind, j.args, **dict(j.options)))
        elif len(j) == 3:
            specs.append(job_spec(j[0], j[1], **dict(j[2])))  # type: ignore[misc]
        else:
            specs.append(job_spec(j[0], j[1]))
    return pb.EnqueueBatchRequest(jobs=specs)


def _spawn_request(id: str, lease_token: int, jobs: Iterable[SpawnJob | NewJob | tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]]) -> pb.SpawnRequest:
    out = []
    for j in jobs:
        step = j.step if isinstance(j, SpawnJob) else None
        after_steps = step_names("after_steps", j.after_steps) if isinstance(j, SpawnJob) else []
        spec = job_spec(j.kind, j.args, **dict(j.options)) if isinstance(j, (SpawnJob, NewJob)) else _batch_request([j]).jobs[0]
        out.append(pb.SpawnJob(job=spec, step=step or "", after_steps=after_steps))
    return pb.SpawnRequest(id=id, lease_token=lease_token, jobs=out)


def _list_request(
    states: Iterable[str] | None, queues: Iterable[str] | None, kinds: Iterable[str] | None,
    error_codes: Iterable[str] | None, fairness_keys: Iterable[str] | None, cursor: str | None, limit: int | None,
    ascending: bool, created_after: datetime | None, created_before: datetime | None,
) -> pb.ListRequest:
    r = pb.ListRequest(
        states=list(states or ()), queues=list(queues or ()), kinds=list(kinds or ()),
        error_codes=list(error_codes or ()), fairness_keys=list(fairness_keys or ()), cursor=cursor or "",
        limit=limit or 0, ascending=ascending,
    )
    if created_after is not None:
        set_time(r.created_after, created_after)
    if created_before is not None:
        set_time(r.created_before, created_before)
    return r


def _filter(queues: Iterable[str] | None, kinds: Iterable[str] | None, failed_after: datetime | None, failed_before: datetime | None) -> pb.DeadLetterFilter:
    f = pb.DeadLetterFilter(queues=list(queues or ()), kinds=list(kinds or ()))
    if failed_after is not None:
        set_time(f.failed_after, failed_after)
    if failed_before is not None:
        set_time(f.failed_before, failed_before)
    return f


def _retry_request(id: str, retries: int | None, args: Any, run_at: datetime | None, reason: str | None, again: bool) -> pb.JobServiceRetryRequest:
    r = pb.JobServiceRetryRequest(id=id, retries=retries or 0, args=encode_json(args), reason=reason or "", again=again)
    if run_at is not None:
        set_time(r.run_at, run_at)
    return r


def _enqueued(r: pb.EnqueueResponse) -> EnqueueResult:
    return EnqueueResult(Job.from_proto(r.job), r.existing, r.merged)


def _page(r: Any) -> Page:
    return Page([Job.from_proto(j) for j in r.jobs], r.next_cursor)


def _history(r: pb.EventsResponse) -> History:
    return History([event_from_proto(e) for e in r.events], [attempt_from_proto(a) for a in r.attempts])


def _dead_page(r: pb.DeadLetterServiceListResponse) -> DeadLetterPage:
    replays = {k: ReplaySummary(v.count, v.last_job_id, time_of(v, "last_replayed_at")) for k, v in r.replays.items()}
    return DeadLetterPage([Job.from_proto(j) for j in r.jobs], r.next_cursor, replays)


def _stats(r: pb.DeadLetterServiceStatsResponse) -> DeadLetterStats:
    return DeadLetterStats(r.count, time_of(r, "oldest_failed_at"), seconds_of(r, "oldest_age"), r.replayed)


class _Base:
    def __init__(self, url: str, api_key: str | None, timeout: float | None) -> None:
        self._md = _rpc.metadata(api_key)
        self._timeout = timeout

    @staticmethod
    def _opts(
        queue: str | None, priority: int | None, run_at: datetime | None, delay: Duration | None,
        max_attempts: int | None, timeout: Duration | None, headers: Mapping[str, str] | None,
        idempotency_key: str | None, idempotency_retention: Duration | None, group_key: str | None,
        retry_policy: RetryPolicy | None, max_rescues: int | None, merge_key: str | None, merge: Merge | None,
        fairness_key: str | None, after: Sequence[str] | None, on_parent_failure: ParentPolicy | None,
    ) -> dict[str, Any]:
        return dict(
            queue=queue, priority=priority, run_at=run_at, delay=delay, max_attempts=max_attempts, timeout=timeout,
            headers=headers, idempotency_key=idempotency_key, idempotency_retention=idempotency_retention,
            group_key=group_key, retry_policy=retry_policy, max_rescues=max_rescues, merge_key=merge_key, merge=merge,
            fairness_key=fairness_key, after=after, on_parent_failure=on_parent_failure,
        )


class Client(_Base):
    """Client enqueues, inspects, cancels, resumes, retries and replays jobs through `hopper
    serve`, blocking. It is safe to share between threads; close it (or use it as a context
    manager) when done. Every method raises a HopperError subclass (NotFound, InvalidArgument
    naming the field, Unavailable, ...) when the server refuses the call or cannot be reached.

    url is the server's base URL ("http://127.0.0.1:7070"; https:// takes TLS); api_key is sent
    as "authorization: Bearer <key>"; timeout bounds each call, in seconds (default none)."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float | None = None) -> None:
        super().__init__(url, api_key, timeout)
        self._channel = _rpc.sync_channel(url)
        self._jobs = _rpc.Service(self._channel, "JobService")
        self._dead = _rpc.Service(self._channel, "DeadLetterService")
        self._server = _rpc.Service(self._channel, "ServerService")
        self._workflows = _rpc.Service(self._channel, "WorkflowService")

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, svc: _rpc.Service, method: str, req: Any) -> Any:
        try:
            return svc[method](req, metadata=self._md, timeout=self._timeout)
        except grpc.RpcError as err:
            raise to_hopper_error(err) from err

    def enqueue(
        self, kind: str, args: Any = None, *, queue: str | None = None, priority: int | None = None,
        run_at: datetime | None = None, delay: Duration | None = None, max_attempts: int | None = None,
        timeout: Duration | None = None, headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None, idempotency_retention: Duration | None = None,
        group_key: str | None = None, retry_policy: RetryPolicy | None = None, max_rescues: int | None = None,
        merge_key: str | None = None, merge: Merge | None = None, fairness_key: str | None = None,
        after: Sequence[str] | None = None, on_parent_failure: ParentPolicy | None = None,
    ) -> EnqueueResult:
        """enqueue stores one job of kind with args (any JSON value; None is {}). Every option may
        be left out, taking the server's default; see the README for what each does."""
        opts = self._opts(queue, priority, run_at, delay, max_attempts, timeout, headers, idempotency_key,
                          idempotency_retention, group_key, retry_policy, max_rescues, merge_key, merge, fairness_key,
                          after, on_parent_failure)
        return _enqueued(self._call(self._jobs, "Enqueue", _enqueue_request(kind, args, opts)))

    def enqueue_many(self, jobs: Iterable[NewJob | tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]]) -> list[EnqueueResult]:
        """enqueue_many stores several jobs in one transaction, all or none: NewJob(kind, args,
        options) or (kind, args[, options]) tuples, options as enqueue takes them."""
        res = self._call(self._jobs, "EnqueueBatch", _batch_request(jobs))
        return [_enqueued(r) for r in res.results]

    def get(self, id: str) -> Job:
        """get returns one job; NotFound when there is none."""
        return Job.from_proto(self._call(self._jobs, "Get", pb.GetRequest(id=id)).job)

    def list(
        self, *, states: Iterable[str] | None = None, queues: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None, error_codes: Iterable[str] | None = None,
        fairness_keys: Iterable[str] | None = None, cursor: str | None = None, limit: int | None = None,
        ascending: bool = False, created_after: datetime | None = None, created_before: datetime | None = None,
    ) -> Page:
        """list returns a page of jobs, newest first unless ascending; unset filters don't filter."""
        req = _list_request(states, queues, kinds, error_codes, fairness_keys, cursor, limit, ascending, created_after, created_before)
        return _page(self._call(self._jobs, "List", req))

    def list_all(self, **filters: Any) -> Iterator[Job]:
        """list_all yields every job the filters (as list takes them) select, a page at a time."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.jobs
            cursor = page.next_cursor
            if not cursor:
                return

    def events(self, id: str) -> History:
        """events returns a job's history: its state transitions and its ended attempts."""
        return _history(self._call(self._jobs, "Events", pb.EventsRequest(id=id)))

    def cancel(self, id: str, *, reason: str = "") -> Job:
        """cancel cancels a job that has not ended; a running job's worker is told to stop.
        FailedPrecondition when it already ended."""
        return Job.from_proto(self._call(self._jobs, "Cancel", pb.CancelRequest(id=id, reason=reason)).job)

    def resume(self, id: str, *, data: Any = None, reason: str = "") -> Job:
        """resume moves a suspended job back to its queue; data (any JSON value) reaches its next
        attempt as job.resume_data. FailedPrecondition for a job that is not suspended."""
        req = pb.JobServiceResumeRequest(id=id, data=encode_json(data), reason=reason)
        return Job.from_proto(self._call(self._jobs, "Resume", req).job)

    def retry(
        self, id: str, *, retries: int | None = None, args: Any = None, run_at: datetime | None = None,
        reason: str | None = None, again: bool = False,
    ) -> Job:
        """retry resolves a failed job in place: the same job goes back to its queue with retries
        more attempts (default 1) and, if given, corrected args."""
        return Job.from_proto(self._call(self._jobs, "Retry", _retry_request(id, retries, args, run_at, reason, again)).job)

    def set_retries(self, id: str, max_attempts: int) -> Job:
        """set_retries sets the attempt budget of a job that has not ended."""
        req = pb.JobServiceSetRetriesRequest(id=id, max_attempts=max_attempts)
        return Job.from_proto(self._call(self._jobs, "SetRetries", req).job)

    def list_dead_letters(
        self, *, queues: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
        failed_after: datetime | None = None, failed_before: datetime | None = None,
        include_replayed: bool = False, error_codes: Iterable[str] | None = None, cursor: str | None = None,
        limit: int | None = None,
    ) -> DeadLetterPage:
        """list_dead_letters returns a page of dead letters (failed jobs), newest first."""
        req = pb.DeadLetterServiceListRequest(
            filter=_filter(queues, kinds, failed_after, failed_before), include_replayed=include_replayed,
            error_codes=list(error_codes or ()), cursor=cursor or "", limit=limit or 0,
        )
        return _dead_page(self._call(self._dead, "List", req))

    def dead_letter_stats(self) -> DeadLetterStats:
        """dead_letter_stats counts the dead letters and says how long the oldest has waited (seconds)."""
        return _stats(self._call(self._dead, "Stats", pb.DeadLetterServiceStatsRequest()))

    def replay(self, id: str, *, again: bool = False, reason: str = "") -> tuple[Job, str]:
        """replay replays one dead letter as a new queued job; returns it and who replayed it.
        NotFound, FailedPrecondition (not failed), AlreadyExists (replayed before, unless again)."""
        res = self._call(self._dead, "Replay", pb.ReplayRequest(id=id, again=again, reason=reason))
        return Job.from_proto(res.job), res.replayed_by

    def replay_many(
        self, *, queues: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
        failed_after: datetime | None = None, failed_before: datetime | None = None, limit: int | None = None,
    ) -> Replayed:
        """replay_many replays, oldest first and in one transaction, up to limit (default 100)
        dead letters matching the filter that were never replayed."""
        req = pb.ReplayManyRequest(filter=_filter(queues, kinds, failed_after, failed_before), limit=limit or 0)
        res = self._call(self._dead, "ReplayMany", req)
        return Replayed([Job.from_proto(j) for j in res.jobs], res.replayed_by, res.skipped)

    def retry_many(
        self, *, queues: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
        failed_after: datetime | None = None, failed_before: datetime | None = None, limit: int | None = None,
        retries: int | None = None, reason: str = "",
    ) -> Retried:
        """retry_many retries in place up to limit dead letters matching the filter."""
        req = pb.DeadLetterServiceRetryManyRequest(
            filter=_filter(queues, kinds, failed_after, failed_before), limit=limit or 0, retries=retries or 0, reason=reason,
        )
        res = self._call(self._dead, "RetryMany", req)
        return Retried([Job.from_proto(j) for j in res.jobs], res.retried_by, res.skipped)

    def enqueue_workflow(self, name: str, steps: Iterable[_wf.Step]) -> _wf.EnqueuedWorkflow:
        """enqueue_workflow stores a workflow: every step's job in one transaction, all or none,
        each step after the steps it names. InvalidArgument names the bad field
        (steps[2].job.after[0], steps[1].job.queue)."""
        return _wf.enqueued(self._call(self._workflows, "EnqueueWorkflow", _wf.enqueue_request(name, steps)))

    def enqueue_batch(self, name: str, jobs: Iterable[_wf.BatchJob], callback: _wf.BatchJob) -> _wf.EnqueuedWorkflow:
        """enqueue_batch stores a batch with a callback as one workflow (batch_steps): its jobs
        (steps job-0, job-1, ...) and its callback (step "callback"), which runs once they have all
        ended, failed or not; its handler counts them with count_batch(job.parent_results())."""
        return self.enqueue_workflow(name, _wf.batch_steps(jobs, callback))

    def get_workflow(self, id: str) -> _wf.WorkflowDetail:
        """get_workflow returns a workflow and its steps, parents first; NotFound when there is none."""
        return _wf.detail(self._call(self._workflows, "GetWorkflow", pb.GetWorkflowRequest(id=id)))

    def list_workflows(
        self, *, name: str | None = None, states: Iterable[str] | None = None, cursor: str | None = None,
        limit: int | None = None, ascending: bool = False,
    ) -> _wf.WorkflowPage:
        """list_workflows returns a page of workflows, newest first unless ascending."""
        return _wf.page(self._call(self._workflows, "ListWorkflows", _wf.list_request(name, states, cursor, limit, ascending)))

    def cancel_workflow(self, id: str, *, reason: str = "") -> _wf.CanceledWorkflow:
        """cancel_workflow cancels every step that has not ended, in one transaction, and returns the
        workflow and the steps' jobs it canceled; FailedPrecondition when every step has ended."""
        return _wf.canceled(self._call(self._workflows, "CancelWorkflow", pb.CancelWorkflowRequest(id=id, reason=reason)))

    def server_info(self) -> pb.ServerInfo:
        """server_info describes the server: version, store, and the input limits it enforces."""
        info: pb.ServerInfo = self._call(self._server, "Info", pb.ServerServiceInfoRequest()).server
        return info


class AsyncClient(_Base):
    """AsyncClient is Client for asyncio: the same methods, awaited. Close it with await close()
    (or use it as an async context manager)."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float | None = None) -> None:
        super().__init__(url, api_key, timeout)
        self._channel = _rpc.aio_channel(url)
        self._jobs = _rpc.Service(self._channel, "JobService")
        self._dead = _rpc.Service(self._channel, "DeadLetterService")
        self._server = _rpc.Service(self._channel, "ServerService")
        self._workflows = _rpc.Service(self._channel, "WorkflowService")

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, svc: _rpc.Service, method: str, req: Any) -> Any:
        try:
            return await svc[method](req, metadata=self._md, timeout=self._timeout)
        except grpc.RpcError as err:
            raise to_hopper_error(err) from err

    async def enqueue(
        self, kind: str, args: Any = None, *, queue: str | None = None, priority: int | None = None,
        run_at: datetime | None = None, delay: Duration | None = None, max_attempts: int | None = None,
        timeout: Duration | None = None, headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None, idempotency_retention: Duration | None = None,
        group_key: str | None = None, retry_policy: RetryPolicy | None = None, max_rescues: int | None = None,
        merge_key: str | None = None, merge: Merge | None = None, fairness_key: str | None = None,
        after: Sequence[str] | None = None, on_parent_failure: ParentPolicy | None = None,
    ) -> EnqueueResult:
        """enqueue: see Client.enqueue."""
        opts = self._opts(queue, priority, run_at, delay, max_attempts, timeout, headers, idempotency_key,
                          idempotency_retention, group_key, retry_policy, max_rescues, merge_key, merge, fairness_key,
                          after, on_parent_failure)
        return _enqueued(await self._call(self._jobs, "Enqueue", _enqueue_request(kind, args, opts)))

    async def enqueue_many(self, jobs: Iterable[NewJob | tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]]) -> list[EnqueueResult]:
        res = await self._call(self._jobs, "EnqueueBatch", _batch_request(jobs))
        return [_enqueued(r) for r in res.results]

    async def get(self, id: str) -> Job:
        return Job.from_proto((await self._call(self._jobs, "Get", pb.GetRequest(id=id))).job)

    async def list(
        self, *, states: Iterable[str] | None = None, queues: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None, error_codes: Iterable[str] | None = None,
        fairness_keys: Iterable[str] | None = None, cursor: str | None = None, limit: int | None = None,
        ascending: bool = False, created_after: datetime | None = None, created_before: datetime | None = None,
    ) -> Page:
        req = _list_request(states, queues, kinds, error_codes, fairness_keys, cursor, limit, ascending, created_after, created_before)
        return _page(await self._call(self._jobs, "List", req))

    async def list_all(self, **filters: Any) -> AsyncIterator[Job]:
        cursor = filters.pop("cursor", None)
        while True:
            page = await self.list(cursor=cursor, **filters)
            for j in page.jobs:
                yield j
            cursor = page.next_cursor
            if not cursor:
                return

    async def events(self, id: str) -> History:
        return _history(await self._call(self._jobs, "Events", pb.EventsRequest(id=id)))

    async def cancel(self, id: str, *, reason: str = "") -> Job:
        return Job.from_proto((await self._call(self._jobs, "Cancel", pb.CancelRequest(id=id, reason=reason))).job)

    async def resume(self, id: str, *, data: Any = None, reason: str = "") -> Job:
        req = pb.JobServiceResumeRequest(id=id, data=encode_json(data), reason=reason)
        return Job.from_proto((await self._call(self._jobs, "Resume", req)).job)

    async def retry(
        self, id: str, *, retries: int | None = None, args: Any = None, run_at: datetime | None = None,
        reason: str | None = None, again: bool = False,
    ) -> Job:
        req = _retry_request(id, retries, args, run_at, reason, again)
        return Job.from_proto((await self._call(self._jobs, "Retry", req)).job)

    async def set_retries(self, id: str, max_attempts: int) -> Job:
        req = pb.JobServiceSetRetriesRequest(id=id, max_attempts=max_attempts)
        return Job.from_proto((await self._call(self._jobs, "SetRetries", req)).job)

    async def list_dead_letters(
        self, *, queues: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
        failed_after: datetime | None = None, failed_before: datetime | None = None,
        include_replayed: bool = False, error_codes: Iterable[str] | None = None, cursor: str | None = None,
        limit: int | None = None,
    ) -> DeadLetterPage:
        req = pb.DeadLetterServiceListRequest(
            filter=_filter(queues, kinds, failed_after, failed_before), include_replayed=include_replayed,
            error_codes=list(error_codes or ()), cursor=cursor or "", limit=limit or 0,
        )
        return _dead_page(await self._call(self._dead, "List", req))

    async def dead_letter_stats(self) -> DeadLetterStats:
        return _stats(await self._call(self._dead, "Stats", pb.DeadLetterServiceStatsRequest()))

    async def replay(self, id: str, *, again: bool = False, reason: str = "") -> tuple[Job, str]:
        res = await self._call(self._dead, "Replay", pb.ReplayRequest(id=id, again=again, reason=reason))
        return Job.from_proto(res.job), res.replayed_by

    async def replay_many(
        self, *, queues: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
        failed_after: datetime | None = None, failed_before: datetime | None = None, limit: int | None = None,
    ) -> Replayed:
        req = pb.ReplayManyRequest(filter=_filter(queues, kinds, failed_after, failed_before), limit=limit or 0)
        res = await self._call(self._dead, "ReplayMany", req)
        return Replayed([Job.from_proto(j) for j in res.jobs], res.replayed_by, res.skipped)

    async def retry_many(
        self, *, queues: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
        failed_after: datetime | None = None, failed_before: datetime | None = None, limit: int | None = None,
        retries: int | None = None, reason: str = "",
    ) -> Retried:
        req = pb.DeadLetterServiceRetryManyRequest(
            filter=_filter(queues, kinds, failed_after, failed_before), limit=limit or 0, retries=retries or 0, reason=reason,
        )
        res = await self._call(self._dead, "RetryMany", req)
        return Retried([Job.from_proto(j) for j in res.jobs], res.retried_by, res.skipped)

    async def enqueue_workflow(self, name: str, steps: Iterable[_wf.Step]) -> _wf.EnqueuedWorkflow:
        """enqueue_workflow: see Client.enqueue_workflow."""
        return _wf.enqueued(await self._call(self._workflows, "EnqueueWorkflow", _wf.enqueue_request(name, steps)))

    async def enqueue_batch(self, name: str, jobs: Iterable[_wf.BatchJob], callback: _wf.BatchJob) -> _wf.EnqueuedWorkflow:
        """enqueue_batch: see Client.enqueue_batch."""
        return await self.enqueue_workflow(name, _wf.batch_steps(jobs, callback))

    async def get_workflow(self, id: str) -> _wf.WorkflowDetail:
        return _wf.detail(await self._call(self._workflows, "GetWorkflow", pb.GetWorkflowRequest(id=id)))

    async def list_workflows(
        self, *, name: str | None = None, states: Iterable[str] | None = None, cursor: str | None = None,
        limit: int | None = None, ascending: bool = False,
    ) -> _wf.WorkflowPage:
        return _wf.page(await self._call(self._workflows, "ListWorkflows", _wf.list_request(name, states, cursor, limit, ascending)))

    async def cancel_workflow(self, id: str, *, reason: str = "") -> _wf.CanceledWorkflow:
        return _wf.canceled(await self._call(self._workflows, "CancelWorkflow", pb.CancelWorkflowRequest(id=id, reason=reason)))

    async def server_info(self) -> pb.ServerInfo:
        info: pb.ServerInfo = (await self._call(self._server, "Info", pb.ServerServiceInfoRequest())).server
        return info
