"""Batch handlers: a batch kind's jobs claimed together (ActivatedJob.batch_id) and run by one
call of its handler (docs/workers.md, "Batches"). Each job stays its own attempt: its own
lease (renewed with the worker's others), its own stop (a lost lease stops it alone) and its
own outcome, decided and reported as a lone attempt's, fenced by its own token."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

from .gen import hopper_pb2 as pb
from .handler_errors import seconds
from .job import RetryPolicy, set_duration

__all__ = ["Batch", "BatchHandler", "BatchHandlerOptions"]

BatchHandler = Callable[[Any], Any]
"""BatchHandler works the jobs of one batch in one call: an `async def` taking a Batch of
RunningJobs, or a plain function taking a Batch of SyncRunningJobs (run on the worker's thread
pool). Each job's outcome is its own: a job failed with batch.fail ends as a handler's raise
would, the others complete (with what batch.set_result gave them). What it raises fails every
job of the batch, each as its own attempt with its own retry budget; what it returns is
ignored."""

DEFAULT_BATCH_MAX_JOBS = 100
"""DEFAULT_BATCH_MAX_JOBS is BatchHandlerOptions.max_jobs when it is 0 (the Go worker's default)."""


@dataclass(frozen=True)
class BatchHandlerOptions:
    """BatchHandlerOptions give a batch kind its handler, how its batches are claimed, and its
    limits. max_jobs bounds one batch's jobs (0: 100); the server says what it takes, and a
    worker given a max_jobs it refuses stops, its error the server's InvalidArgument naming
    batch_kinds[i].max_jobs. max_wait (seconds or a timedelta, default 0) is the linger: a
    batch with fewer than max_jobs jobs is claimed once its oldest job has been due this long.
    ungrouped batches the kind's jobs without a group key too (without it this worker does not
    claim them). timeout bounds each job's attempt unless the job has its own (a batch runs
    until the shortest of its jobs'); retry_policy is the kind's backoff."""

    handle: BatchHandler
    max_jobs: int = 0
    max_wait: float | timedelta = 0.0
    ungrouped: bool = False
    timeout: float | timedelta | None = None
    retry_policy: RetryPolicy | None = None


J = TypeVar("J")


class Batch(Generic[J]):
    """Batch is the jobs one call of a batch handler runs (jobs: RunningJob for an async
    handler, SyncRunningJob for a plain one), and what it says of each. Use it only until the
    handler returns."""

    def __init__(self, jobs: Sequence[J], stopped: Callable[[], bool]) -> None:
        self.jobs: list[J] = list(jobs)
        """jobs are the batch's jobs: a group's in the group's order, or the kind's ungrouped
        jobs in claim order."""
        self._stopped = stopped
        self._failed: dict[int, BaseException] = {}
        self._results: dict[int, Any] = {}

    @property
    def stopping(self) -> bool:
        """stopping: every job of the batch was told to stop (the batch's timeout, a stopping
        worker's grace); a plain handler should return soon. A job told to stop alone (its
        lease lost) says so on its own stopping."""
        return self._stopped()

    def fail(self, i: int, error: BaseException | None) -> None:
        """fail sets the outcome of jobs[i] to error, as a handler raising it would (NoRetry,
        RetryAfter, Snooze, Suspend, BusinessError…); None makes it succeed again. It raises
        IndexError when i is out of range."""
        self._check(i)
        if error is None:
            self._failed.pop(i, None)
        else:
            self._failed[i] = error

    def set_result(self, i: int, value: Any) -> None:
        """set_result stores value (any JSON value) as the result of jobs[i] when it succeeds.
        It raises IndexError when i is out of range."""
        self._check(i)
        self._results[i] = value

    def _outcome(self, i: int) -> tuple[BaseException | None, Any]:
        """_outcome is what the handler said of jobs[i]: its failure, else its result."""
        return self._failed.get(i), self._results.get(i)

    def _check(self, i: int) -> None:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.jobs):
            raise IndexError(f"hopper: batch job {i!r} is out of range (the batch has {len(self.jobs)} jobs)")


class _BatchHandler:
    """_BatchHandler is a batch kind's options, checked."""

    __slots__ = ("fn", "is_async", "timeout", "policy", "max_jobs", "max_wait", "ungrouped")

    def __init__(self, kind: str, h: BatchHandler | BatchHandlerOptions, check_handler: Callable[[str, Any], Any]) -> None:
        opts = h if isinstance(h, BatchHandlerOptions) else BatchHandlerOptions(handle=h)
        name = f"batch_handlers[{kind!r}]"
        if not callable(opts.handle):
            raise TypeError(f"hopper: Worker: {name} is not callable")
        self.fn = opts.handle
        self.is_async = inspect.iscoroutinefunction(opts.handle) or inspect.iscoroutinefunction(
            getattr(opts.handle, "__call__", None))
        base = check_handler(name, opts)
        self.timeout: float | None = base.timeout
        self.policy: pb.RetryPolicy | None = base.policy
        if isinstance(opts.max_jobs, bool) or not isinstance(opts.max_jobs, int) or opts.max_jobs < 0:
            raise ValueError(f"hopper: Worker: {name}.max_jobs {opts.max_jobs!r} is not a whole number of jobs")
        self.max_jobs = opts.max_jobs or DEFAULT_BATCH_MAX_JOBS
        self.max_wait = seconds(opts.max_wait)
        if not self.max_wait >= 0:
            raise ValueError(f"hopper: Worker: {name}.max_wait {self.max_wait} is not a duration")
        self.ungrouped = bool(opts.ungrouped)

    def kind_proto(self, kind: str) -> pb.BatchKind:
        """kind_proto is how the worker's requests name the kind (batch_kinds)."""
        bk = pb.BatchKind(kind=kind, max_jobs=self.max_jobs, ungrouped=self.ungrouped)
        if self.max_wait:
            set_duration(bk.max_wait, self.max_wait)
        return bk


def grouped(jobs: Sequence[pb.ActivatedJob]) -> list[list[pb.ActivatedJob]]:
    """grouped splits jobs as the server sent them into units to run: each job alone, and the
    jobs of each batch (one batch_id) together, in order."""
    out: list[list[pb.ActivatedJob]] = []
    at: dict[str, int] = {}
    for j in jobs:
        if j.batch_id and j.batch_id in at:
            out[at[j.batch_id]].append(j)
            continue
        if j.batch_id:
            at[j.batch_id] = len(out)
        out.append([j])
    return out
