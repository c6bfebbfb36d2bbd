"""An asyncio worker: it takes jobs from `hopper serve` (a stream the server pushes into, or
long polls), runs their handlers, keeps their leases and reports how each attempt ended.

These are the Go worker's rules (remote/), as the TypeScript SDK has them
(clients/typescript/src): the same outcomes, lease keeping, batched reports and outage survival.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import os
import signal as signals
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Union

import grpc
import grpc.aio

from . import _backoff, _governor, _rpc
from .batch import Batch, BatchHandler, BatchHandlerOptions, _BatchHandler, grouped
from ._json import decode_json
from .errors import (
    FailedPrecondition, HopperError, Internal, InvalidArgument, NoLimitsError, NotFound, Unavailable, error_of, is_refusal,
    to_hopper_error,
)
from .gen import hopper_pb2 as pb
from .handler_errors import JobTimeout, LeaseLostError, NoRetry, Shutdown, seconds
from .client import EnqueueResult, _enqueued, _spawn_request
from .job import NewJob, ParentResult, RetryPolicy, SpawnJob, set_duration, time_of
from .outcome import Decision, Ending, Mode, decide, outcome_name
from .text import Limits, clip_text, limits_of

__all__ = ["Worker", "HandlerOptions", "RunningJob", "SyncRunningJob", "WorkerEvent", "Handler", "Batch", "BatchHandler",
           "BatchHandlerOptions"]

try:  # OpenTelemetry is optional: with it, a handler runs in the trace context its job's headers carry.
    from opentelemetry import context as _otel_context
    from opentelemetry import propagate as _otel_propagate
except ImportError:  # pragma: no cover - depends on what is installed
    _otel_context = None
    _otel_propagate = None


Handler = Callable[[Any], Any]
"""Handler works one job: an `async def` taking a RunningJob, or a plain function taking a
SyncRunningJob (run on the worker's own thread pool). What it returns (any JSON value, or None)
is stored as the job's result; what it raises fails the attempt (see README)."""


@dataclass(frozen=True)
class HandlerOptions:
    """HandlerOptions gives a kind its own limits: timeout bounds each attempt unless the job has
    its own (seconds or a timedelta); retry_policy is the kind's backoff (the job's own fields
    come first, then these, then the server's)."""

    handle: Handler
    timeout: float | timedelta | None = None
    retry_policy: RetryPolicy | None = None


@dataclass(frozen=True)
class WorkerEvent:
    """WorkerEvent is one thing that happened to an attempt: "started", or "ended" with its
    outcome (ok, error, panic, timeout, snoozed, suspended, canceled) and run time in seconds."""

    type: Literal["started", "ended"]
    job_id: str
    kind: str
    queue: str
    attempt: int
    outcome: str = ""
    run_time: float = 0.0


# How long an outcome's report is retried, in seconds.
_REPORT_TIMEOUT = 30.0
# The most outcomes in one Report request (the server takes 1,000 items), and how many such
# requests may be on the wire at once.
_MAX_BATCH = 500
_BATCH_SLOTS = 2
_BATCH_TIMEOUT = 20.0
# How long stop waits for handlers after telling them to stop at its deadline.
_STOP_GRACE = 0.5
# How long a stopping worker waits for another push before it closes its stream, and at most.
_SETTLE_QUIET = 0.1
_SETTLE_MAX = 1.0
# How long a stream must stay open, without a message, to count as working.
_STREAM_WORKED = 10.0
# How many keepalive periods of silence make a stream dead.
_SILENT_KEEPALIVES = 3
# How long a poll with few free slots waits for more.
_POLL_COALESCE = 0.002
_MAX_QUEUES = 64
# The most kinds a stream's kind_concurrency caps (the server's bound).
_MAX_STREAM_KIND_CAPS = 64
# How long a poll that leaves out a saturated kind waits at most: the kind's jobs are asked for
# again that soon after one of its jobs ends (the Go worker's rule).
_SATURATED_POLL_WAIT = 0.5
# How often a held worker repeats its hold.
_HOLD_REFRESH = 10.0


class _Attempt:
    """_Attempt is one attempt this worker runs: a job, its lease token, and why it was told to stop."""

    __slots__ = (
        "job", "key", "lease", "timeout", "pending", "beat", "cause", "task", "cancellable", "done", "handled",
        "limits", "on_abort",
    )

    def __init__(self, job: pb.ActivatedJob, lease: float, handled: Callable[[], None] | None, limits: Limits) -> None:
        self.job = job
        self.key = (job.id, job.lease_token)
        self.lease = lease
        self.timeout: float | None = None
        # Signs of life the server could not be reached for (an outage, a restart): kept, the
        # latest progress winning, and sent with the handler's next call or before the outcome.
        self.pending: tuple[int, str] | None = None
        self.beat = False
        self.cause: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self.cancellable = False  # an async handler runs in task now: stopping it cancels it
        self.done: asyncio.Future[None] | None = None
        self.handled = _once(handled)
        self.limits = limits
        self.on_abort: Callable[[], None] | None = None  # a batch's: stops its call once every job is told to stop

    def abort(self, reason: BaseException) -> None:
        """abort tells the handler to stop, for reason; only the first reason counts. An async
        handler is cancelled (CancelledError at its next await); a plain one sees job.stopping."""
        if self.cause is not None:
            return
        self.cause = reason
        if self.cancellable and self.task is not None:
            self.task.cancel()
        if self.on_abort is not None:
            self.on_abort()


def _once(f: Callable[[], None] | None) -> Callable[[], None]:
    called = False

    def run() -> None:
        nonlocal called
        if called or f is None:
            return
        called = True
        f()

    return run


class RunningJob:
    """RunningJob is the job an `async def` handler works on, with the calls it can make about
    its attempt. Its payloads are decoded JSON values; durations are seconds."""

    def __init__(self, worker: Worker, a: _Attempt, args: Any) -> None:
        self._w = worker
        self._a = a
        self.args = args
        j = a.job
        self.id: str = j.id
        self.kind: str = j.kind
        self.queue: str = j.queue
        self.headers: dict[str, str] = dict(j.headers)
        self.attempt: int = j.attempt
        """attempt is 1 for the first attempt."""
        self.max_attempts: int = j.max_attempts
        self.lease_token: int = j.lease_token
        self.created_at: datetime | None = time_of(j, "created_at")
        self.checkpoint: Any = decode_json(j.checkpoint)
        """checkpoint is what a suspended, snoozed or failed earlier attempt left, if any."""
        self.resume_data: Any = decode_json(j.resume_data)
        """resume_data is what Client.resume handed to the job, if it was resumed."""

    @property
    def timeout(self) -> float | None:
        """timeout is the attempt's execution limit in seconds, if it has one."""
        return self._a.timeout

    @property
    def stop_reason(self) -> BaseException | None:
        """stop_reason is why the attempt was told to stop: JobTimeout, LeaseLostError (canceled,
        or its lease lapsed) or Shutdown; None while it was not."""
        return self._a.cause

    @property
    def stopping(self) -> bool:
        """stopping: the attempt was told to stop (see stop_reason)."""
        return self._a.cause is not None

    async def progress(self, percent: float, message: str = "") -> None:
        """progress stores progress (percent, clamped to 0–100, and a message) and counts as a
        heartbeat. It raises LeaseLostError, and stops the attempt, when the job is no longer this
        attempt's. While the server cannot be reached it does not raise: the latest progress is
        kept and sent with the next call or, at the latest, before the attempt's outcome."""
        p = int(round(min(100.0, max(0.0, float(percent))))) if percent == percent else 0
        self._a.pending = (p, clip_text(message, self._a.limits.progress_message_bytes))
        await self._w._check(self._a, self._w._send_pending(self._a), kept=True)

    async def heartbeat(self) -> None:
        """heartbeat records a sign of life; it raises and keeps as progress does."""
        self._a.beat = True
        await self._w._check(self._a, self._w._send_pending(self._a), kept=True)

    async def extend_lease(self, duration: float | timedelta) -> None:
        """extend_lease sets the lease to expire duration from now (it may shorten it); later
        renewals keep it and come every third of it. It raises as progress does, and
        Unavailable when the server cannot be reached."""
        d = seconds(duration)
        req = pb.ExtendLeaseRequest(id=self.id, lease_token=self.lease_token)
        set_duration(req.duration, d)
        await self._w._check(self._a, self._w._call("ExtendLease", req))
        self._a.lease = d
        self._w._leases_shortened()

    async def parent_results(self) -> list[ParentResult]:
        """parent_results reads the job's parents (after=), in the order the job named them, each
        with how it ended and what it left: a fan-in step gathers what its fan-out produced. They
        come with the job when the worker asks for them (fetch_parent_results) and fit the
        server's max_args_bytes; else they are read from the server when called, so call it once
        and keep the answer. A job without parents has none. It raises LeaseLostError, and stops
        the attempt, when the job is no longer this attempt's."""
        j = self._a.job
        # An empty list is not trusted: the job may have no parents, or a server older than
        # fetch_parent_results sent none. The call tells.
        if len(j.parent_results) > 0 and not j.parent_results_omitted:
            return [ParentResult.from_proto(p) for p in j.parent_results]
        got: list[ParentResult] = []

        async def read() -> None:
            res = await self._w._call("ParentResults", pb.ParentResultsRequest(id=self.id, lease_token=self.lease_token))
            got.extend(ParentResult.from_proto(p) for p in res.parents)

        await self._w._check(self._a, read())
        return got

    async def spawn(self, jobs: Iterable[SpawnJob | NewJob | tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]]) -> list[EnqueueResult]:
        """spawn adds jobs while the handler runs (docs/workflows.md, "Fan-out at run time"): each
        goes in this job's workflow, as its step (SpawnJob.step, or named for it), and every job
        that waits for this one waits for them too, so a merge step after a split step runs once
        the split and every chunk it spawned have ended. All or none, in one transaction. A step
        name already in the workflow (or an idempotency key) returns that job (existing): a
        retried attempt that spawns the same steps adds nothing. A job's after may name jobs that
        exist (this one, its parents, jobs an earlier spawn returned). It raises InvalidArgument
        naming the field (jobs[1].queue) for bad input, and LeaseLostError, stopping the attempt,
        when the job is no longer this attempt's."""
        req = _spawn_request(self.id, self.lease_token, jobs)
        got: list[EnqueueResult] = []

        async def call() -> None:
            res = await self._w._call("Spawn", req)
            got.extend(_enqueued(r) for r in res.results)

        await self._w._check(self._a, call())
        return got


class SyncRunningJob:
    """SyncRunningJob is what a plain (blocking) handler works on, on the worker's thread pool:
    RunningJob's fields, and its calls as blocking methods."""

    def __init__(self, job: RunningJob, loop: asyncio.AbstractEventLoop) -> None:
        self._job = job
        self._loop = loop
        self.args = job.args
        self.id = job.id
        self.kind = job.kind
        self.queue = job.queue
        self.headers = job.headers
        self.attempt = job.attempt
        self.max_attempts = job.max_attempts
        self.lease_token = job.lease_token
        self.created_at = job.created_at
        self.checkpoint = job.checkpoint
        self.resume_data = job.resume_data

    @property
    def timeout(self) -> float | None:
        return self._job.timeout

    @property
    def stop_reason(self) -> BaseException | None:
        return self._job.stop_reason

    @property
    def stopping(self) -> bool:
        """stopping: the attempt was told to stop; a plain handler should return soon (see stop_reason)."""
        return self._job.stopping

    def _wait(self, coro: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def progress(self, percent: float, message: str = "") -> None:
        self._wait(self._job.progress(percent, message))

    def heartbeat(self) -> None:
        self._wait(self._job.heartbeat())

    def extend_lease(self, duration: float | timedelta) -> None:
        self._wait(self._job.extend_lease(duration))

    def parent_results(self) -> list[ParentResult]:
        return asyncio.run_coroutine_threadsafe(self._job.parent_results(), self._loop).result()

    def spawn(self, jobs: Iterable[SpawnJob | NewJob | tuple[str, Any] | tuple[str, Any, Mapping[str, Any]]]) -> list[EnqueueResult]:
        return asyncio.run_coroutine_threadsafe(self._job.spawn(list(jobs)), self._loop).result()


@dataclass(frozen=True)
class _KindLimits:
    timeout: float | None
    policy: pb.RetryPolicy | None


def _kind_limits(name: str, opts: HandlerOptions | BatchHandlerOptions) -> _KindLimits:
    """_kind_limits checks a kind's timeout and retry policy as the server would: a kind's
    retry_policy goes with each failure, and one the server refuses would fail every attempt
    with its reason instead."""
    timeout = seconds(opts.timeout) if opts.timeout is not None else None
    if timeout is not None and not timeout >= 0:
        raise ValueError(f"hopper: Worker: {name}.timeout {timeout} is not a duration")
    p = opts.retry_policy
    if p is not None:
        if p.multiplier is not None and not p.multiplier >= 1:
            raise ValueError(f"hopper: Worker: {name}.retry_policy: multiplier {p.multiplier} must be at least 1")
        if p.jitter is not None and p.jitter > 1:
            raise ValueError(f"hopper: Worker: {name}.retry_policy: jitter {p.jitter} must be at most 1")
    return _KindLimits(timeout, p.to_proto() if p is not None else None)


class _Handler:
    __slots__ = ("fn", "is_async", "timeout", "policy")

    def __init__(self, kind: str, h: Handler | HandlerOptions) -> None:
        opts = h if isinstance(h, HandlerOptions) else HandlerOptions(handle=h)
        if not callable(opts.handle):
            raise TypeError(f"hopper: Worker: handlers[{kind!r}] is not callable")
        self.fn = opts.handle
        self.is_async = inspect.iscoroutinefunction(opts.handle) or inspect.iscoroutinefunction(
            getattr(opts.handle, "__call__", None))
        limits = _kind_limits(f"handlers[{kind!r}]", opts)
        self.timeout, self.policy = limits.timeout, limits.policy


def _kind_concurrency(caps: Mapping[str, int] | None, handlers: Mapping[str, object], mode: str) -> dict[str, int]:
    """_kind_concurrency checks the kind_concurrency option, as the Go and TypeScript workers
    do: each bound a whole number of at least 1, each kind one with a handler, at most 64 kinds
    in stream mode (a poll caps any number)."""
    if caps is None:
        return {}
    if not isinstance(caps, Mapping):
        raise TypeError(f"hopper: Worker: kind_concurrency {caps!r} is not a mapping of kind to bound")
    out: dict[str, int] = {}
    for kind, n in caps.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"hopper: Worker: kind_concurrency[{kind!r}] {n!r} is not a whole number of at least 1")
        if kind not in handlers:
            raise ValueError(f"hopper: Worker: kind_concurrency[{kind!r}] names a kind with no handler")
        out[kind] = n
    if mode == "stream" and len(out) > _MAX_STREAM_KIND_CAPS:
        raise ValueError(f"hopper: Worker: kind_concurrency caps {len(out)} kinds; a stream caps at most {_MAX_STREAM_KIND_CAPS}")
    return out


class _KindSlots:
    """_KindSlots counts the running handlers of the capped kinds (kind_concurrency). A poll
    leaves out the saturated kinds, so their jobs stay queued for other workers, and asks for no
    more jobs than the capped kinds it names have room for: no job is claimed that could not
    run. In stream mode, where the server applies the caps to what it pushes, the worker counts
    its handlers with one too, as a second guard (Worker._admit)."""

    __slots__ = ("caps", "held", "freed")

    def __init__(self, caps: Mapping[str, int]) -> None:
        self.caps = caps
        self.held: dict[str, int] = {}
        self.freed: Callable[[], None] | None = None  # called when a capped kind's job ends

    def ask(self, kinds: list[str], n: int) -> tuple[list[str], int, bool] | None:
        """ask is the kinds and the most jobs the next poll for up to n jobs asks for, and
        whether it left out a saturated kind; None when every kind is saturated."""
        asked: list[str] = []
        saturated = False
        for kind in kinds:
            cap = self.caps.get(kind)
            if cap is None:
                asked.append(kind)
                continue
            room = cap - self.held.get(kind, 0)
            if room <= 0:
                saturated = True
                continue
            asked.append(kind)
            n = min(n, room)
        if not asked:
            return None
        return asked, n, saturated

    def room(self, kind: str) -> bool:
        """room says whether a job of kind may start: kind is not capped, or has room."""
        cap = self.caps.get(kind)
        return cap is None or self.held.get(kind, 0) < cap

    def take(self, kind: str) -> None:
        if kind in self.caps:
            self.held[kind] = self.held.get(kind, 0) + 1

    def give(self, kind: str) -> None:
        if kind not in self.caps:
            return
        self.held[kind] = self.held.get(kind, 1) - 1
        if self.freed is not None:
            self.freed()


class Worker:
    """Worker runs jobs from `hopper serve` with the handlers of its kinds.

        worker = Worker("http://127.0.0.1:7070", handlers={"email.send": send}, concurrency=20)
        await worker.run()  # until SIGTERM or SIGINT, then drains

    Handlers run concurrently, at most concurrency at once: `async def` handlers on the event
    loop, plain functions on a thread pool of concurrency threads that the worker owns (never
    the loop's default executor). What a handler returns completes its job; what it raises
    fails the attempt, unless it is NoRetry, RetryAfter, BusinessError, Snooze, Suspend or a
    CheckpointError. The worker renews its jobs' leases itself, in both modes. A stream that
    drops, or a server that restarts, stops no handler: the stream is reconnected with backoff,
    leases renewed and outcomes reported once a server answers again.

    Options (durations in seconds or timedeltas): see README.md for each. Bad options raise
    ValueError or TypeError naming the option.
    """

    def __init__(
        self,
        url: str,
        *,
        handlers: Mapping[str, Handler | HandlerOptions] | None = None,
        batch_handlers: Mapping[str, BatchHandler | BatchHandlerOptions] | None = None,
        api_key: str | None = None,
        queue: str | None = None,
        queues: list[str] | None = None,
        concurrency: int = 10,
        prefetch: int = 0,
        kind_concurrency: Mapping[str, int] | None = None,
        mode: Mode = "stream",
        name: str | None = None,
        lease_duration: float | timedelta = 30.0,
        poll_wait: float | timedelta = 30.0,
        logger: logging.Logger | None = None,
        observer: Callable[[WorkerEvent], None] | None = None,
        max_cpu: float = 0.0,
        max_memory: int = 0,
        fetch_parent_results: bool = False,
    ) -> None:
        self._url = url
        _rpc.target_of(url)
        self._md = _rpc.metadata(api_key)
        self._mode: Mode = mode
        self._concurrency = concurrency
        self._prefetch = prefetch
        self._lease = seconds(lease_duration)
        self._poll_wait = seconds(poll_wait)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        """name identifies this worker on leases and attempts (default host-pid)."""
        self._log = logger or logging.getLogger("hopper")
        self._observer = observer
        qs: list[str] = []
        for i, q in enumerate(queues or []):
            if not isinstance(q, str) or q == "":
                raise ValueError(f"hopper: Worker: queues[{i}] is empty")
        for q in ([queue] if queue else []) + list(queues or []):
            if q not in qs:
                qs.append(q)
        self._queues = qs or ["default"]
        if len(self._queues) > _MAX_QUEUES:
            raise ValueError(f"hopper: Worker: queues: {len(self._queues)} queues, more than {_MAX_QUEUES}")
        if not handlers and not batch_handlers:
            raise ValueError("hopper: Worker: handlers has no handler")
        self._handlers = {kind: _Handler(kind, h) for kind, h in (handlers or {}).items()}
        self._batch_handlers: dict[str, _BatchHandler] = {}
        for kind, bh in (batch_handlers or {}).items():
            if kind in self._handlers:
                raise ValueError(f"hopper: Worker: batch_handlers[{kind!r}]: the kind has a handler in handlers too")
            self._batch_handlers[kind] = _BatchHandler(kind, bh, _kind_limits)
        if mode not in ("stream", "poll"):
            raise ValueError(f'hopper: Worker: mode {mode!r} is neither "stream" nor "poll"')
        if not isinstance(concurrency, int) or not 1 <= concurrency <= 1000:
            raise ValueError(f"hopper: Worker: concurrency {concurrency!r} is outside 1–1000")
        if not isinstance(prefetch, int) or prefetch < 0:
            raise ValueError(f"hopper: Worker: prefetch {prefetch!r} is not a whole number of jobs")
        if prefetch and mode != "stream":
            raise ValueError("hopper: Worker: prefetch is for stream mode; a poll asks only for free slots")
        if concurrency + prefetch > 1000:
            raise ValueError(f"hopper: Worker: concurrency {concurrency} and prefetch {prefetch}: together at most 1000, a stream's credit")
        if not self._lease >= 1:
            raise ValueError(f"hopper: Worker: lease_duration {self._lease} is under 1 second")
        if not 0 < self._poll_wait <= 300:
            raise ValueError(f"hopper: Worker: poll_wait {self._poll_wait} is outside 0–300 seconds")
        self._kind_caps = _kind_concurrency(kind_concurrency, {**self._handlers, **self._batch_handlers}, mode)
        # The running handlers of the capped kinds, in both modes (in stream mode a second guard
        # behind the server's caps: for jobs of a stream that closed still running as another
        # opens, and for a server that ignores the caps).
        self._kinds = _KindSlots(self._kind_caps)

        if not (isinstance(max_cpu, (int, float)) and 0 <= max_cpu <= 1):
            raise ValueError(f"hopper: Worker: max_cpu {max_cpu!r} is outside 0–1")
        if not isinstance(max_memory, int) or max_memory < 0:
            raise ValueError(f"hopper: Worker: max_memory {max_memory!r} is not a number of bytes")
        self._max_cpu = float(max_cpu)
        self._max_memory = max_memory
        self._fetch_parent_results = bool(fetch_parent_results)
        # The governor's reader and its sampling interval (tests set them before start).
        self._gov_reader: _governor.Reader | None = _governor.ProcReader() if (max_cpu or max_memory) else None
        self._gov_interval = 1.0
        self._governor: _governor.Governor | None = None
        self._gov_tasks: list[asyncio.Task[None]] = []

        self._limits: Limits | None = None  # the server's, once it has said them: no job is taken before
        self._state: Literal["new", "started", "stopping", "stopped"] = "new"
        self._attempts: dict[tuple[str, int], _Attempt] = {}
        self._waiting: list[list[_Attempt]] = []  # stream mode: jobs (a job, or a batch's) pushed while every slot, or its kind's room, was taken, in push order
        self._declined: list[pb.ActivatedJob] = []  # pushed to a stopping worker: released once its stream is closed
        self._busy = 0  # stream mode: slots taken by handlers
        self._refusal: HopperError | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._intake: asyncio.Task[None] | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._stopped: asyncio.Future[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        # Set on start, in the running loop.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._channel: grpc.aio.Channel | None = None
        self._api: _rpc.Service | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._woken: asyncio.Event | None = None  # the lease keeper: a lease got shorter
        self._pushed: asyncio.Event | None = None  # a job was declined (settle)
        self._freed: asyncio.Event | None = None  # poll mode: a slot came free
        self._kind_freed: asyncio.Event | None = None  # poll mode: a capped kind's job ended
        self._reporting: set[asyncio.Future[None]] = set()
        # The Report batcher.
        self._batch: list[tuple[pb.Outcome, float, asyncio.Future[None]]] = []
        self._sending = 0

    # ---- lifecycle ----

    @property
    def error(self) -> HopperError | None:
        """error is why the worker stopped taking jobs by itself: the server refused its API key
        (Unauthenticated, PermissionDenied) on a call, serves no input limits (NoLimitsError:
        the worker takes its limits only from its server, and no job before it has them), or
        refused its requests for jobs (InvalidArgument naming the field: a batch_handlers
        max_jobs it does not take is batch_kinds[i].max_jobs). Asking
        again cannot help, so it does not (it renews no lease either): start a new one with a
        valid key, against an upgraded server. None otherwise."""
        return self._refusal

    @property
    def running(self) -> int:
        """running is the number of jobs this worker runs now."""
        return len(self._attempts)

    async def start(self) -> None:
        """start begins taking jobs, in the running event loop. It raises RuntimeError when the
        worker was started before."""
        if self._state != "new":
            raise RuntimeError("hopper: worker already started")
        self._state = "started"
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._channel = _rpc.aio_channel(self._url)
        self._api = _rpc.Service(self._channel, "WorkerService")
        self._pool = ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix=f"hopper-{self.name}")
        self._woken = asyncio.Event()
        self._pushed = asyncio.Event()
        self._freed = asyncio.Event()
        self._kind_freed = asyncio.Event()
        self._kinds.freed = self._kind_freed.set
        self._keeper = loop.create_task(self._keep_leases())
        self._intake = loop.create_task(self._take_jobs())
        if self._gov_reader is not None:
            gov = _governor.Governor(self._max_cpu, self._max_memory, self._log, self.name, self._gov_reader, self._gov_interval)
            self._governor = gov
            gov.sample()  # the first sample before the first poll
            self._gov_tasks = [loop.create_task(gov.run()), loop.create_task(self._report_holds(gov))]

    async def stop(self, grace: float | timedelta | None = None) -> None:
        """stop shuts down gracefully: it starts no new job and lets running jobs finish for grace
        (None: until they do; 0 stops hard), then tells them to stop with a Shutdown (async
        handlers are cancelled) and waits a moment (0.5 s) for them. Jobs it will not run go back
        to their queue. A handler that does not return is left running and its job not released:
        its lease, no longer renewed, expires and the job returns to its queue. Calling stop
        again waits for the same stop; stopping a worker never started does nothing."""
        if self._state == "new":
            return
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._shutdown(None if grace is None else seconds(grace)))
        await asyncio.shield(self._stopped)

    async def run(self, *, drain: float | timedelta | None = None, signals_to_handle: tuple[int, ...] = (signals.SIGTERM, signals.SIGINT)) -> None:
        """run starts the worker and runs it until SIGTERM or SIGINT (or until it stops by itself:
        see error), then stops it, draining running jobs for drain (None: until they end)."""
        await self.start()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        installed = []
        for s in signals_to_handle:
            try:
                loop.add_signal_handler(s, stop.set)
                installed.append(s)
            except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
                pass
        try:
            waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(stop.wait())]
            if self._intake is not None:
                waits.append(asyncio.shield(self._intake))
            done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for p in pending:
                p.cancel()
        finally:
            for s in installed:
                loop.remove_signal_handler(s)
            await self.stop(drain)

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _shutdown(self, grace: float | None) -> None:
        self._state = "stopping"
        for a in (a for unit in self._waiting for a in unit):
            self._decline(a.job)  # never started: released with the stream closed
        self._waiting.clear()
        if self._mode == "poll":
            await self._end_intake()
        running = [a.done for a in self._attempts.values() if a.done is not None]
        if running:
            _, pending = await asyncio.wait(running, timeout=grace)
            if pending:
                self._abort_all()
                _, pending = await asyncio.wait(pending, timeout=_STOP_GRACE)
                if pending:
                    self._log.warning("hopper: handlers did not return after shutdown; leaving them (worker %s, %d running)", self.name, len(pending))
        if self._mode == "stream":
            await self._settle()
        await self._end_intake()
        for t in self._gov_tasks:
            t.cancel()
        await asyncio.gather(*self._gov_tasks, return_exceptions=True)
        if self._keeper is not None:
            self._keeper.cancel()
            await asyncio.gather(self._keeper, return_exceptions=True)
        if self._reporting:
            await asyncio.gather(*self._reporting, return_exceptions=True)
        await self._release_declined()
        self._abort_all()
        self._state = "stopped"
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        if self._channel is not None and not self._attempts:
            await self._channel.close()

    async def _end_intake(self) -> None:
        t = self._intake
        if t is not None and not t.done():
            t.cancel()
        if t is not None:
            await asyncio.gather(t, return_exceptions=True)

    def _abort_all(self) -> None:
        for a in list(self._attempts.values()):
            a.abort(Shutdown())

    async def _settle(self) -> None:
        """settle waits until the server can push no more (declined and running jobs fill the
        credit) or nothing was pushed for a moment: a job in flight when the stream closes would
        never be received, and would count as lost."""
        assert self._pushed is not None
        deadline = time.monotonic() + _SETTLE_MAX
        while len(self._declined) + len(self._attempts) < self._concurrency + self._prefetch:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._pushed.clear()
            try:
                await asyncio.wait_for(self._pushed.wait(), min(_SETTLE_QUIET, left))
            except asyncio.TimeoutError:
                return

    def _refused(self, err: HopperError) -> None:
        """_refused stops the worker taking jobs, for good, and says why once."""
        if self._refusal is not None:
            return
        self._refusal = err
        if isinstance(err, NoLimitsError):
            self._log.error("hopper: the worker takes no jobs (worker %s): %s", self.name, err.raw_message)
        elif isinstance(err, InvalidArgument):
            self._log.error("hopper: the server refused the worker's requests for jobs: it takes no jobs until it is started again with options the server takes (worker %s): %s", self.name, err)
        else:
            self._log.error("hopper: the server refused the worker's API key: it takes no more jobs until it is started again with a valid key (worker %s): %s", self.name, err)
        if self._intake is not None and asyncio.current_task() is not self._intake:
            self._intake.cancel()
        if self._keeper is not None and asyncio.current_task() is not self._keeper:
            self._keeper.cancel()

    # ---- calls ----

    def _call(self, method: str, req: Any, timeout: float | None = None) -> Any:
        assert self._api is not None
        return self._api[method](req, metadata=self._md, timeout=timeout)

    async def _check(self, a: _Attempt, call: Awaitable[Any], kept: bool = False) -> None:
        """_check turns a refused lease into a LeaseLostError and stops the handler, as in
        process; with kept, an unreachable server is no error (what was sent is kept)."""
        try:
            await call
        except (grpc.RpcError, HopperError) as e:
            err = to_hopper_error(e)
            if kept and isinstance(err, Unavailable):
                return
            if not isinstance(err, (FailedPrecondition, NotFound)):
                raise err from e
            lost = LeaseLostError(f"job {a.job.id}: lease lost")
            a.abort(lost)
            raise lost from None

    async def _send_pending(self, a: _Attempt) -> None:
        """_send_pending sends a's kept progress, or else its owed heartbeat, and forgets what it
        sent unless the server could not be reached (it raises Unavailable then, and keeps it)."""
        progress = a.pending
        if progress is None and not a.beat:
            return
        try:
            if progress is not None:
                await self._call("ReportProgress", pb.ReportProgressRequest(
                    id=a.job.id, lease_token=a.job.lease_token, percent=progress[0], message=progress[1]))
            else:
                await self._call("Heartbeat", pb.HeartbeatRequest(id=a.job.id, lease_token=a.job.lease_token))
        except grpc.RpcError as e:
            err = to_hopper_error(e)
            if not isinstance(err, Unavailable) and a.pending is progress:
                a.pending, a.beat = None, False
            raise err from e
        if a.pending is progress:  # not replaced meanwhile
            a.pending, a.beat = None, False

    # ---- intake ----

    async def _take_jobs(self) -> None:
        if not await self._learn_limits():
            return
        kinds = sorted([*self._handlers, *self._batch_handlers])
        queues = self._queues if len(self._queues) > 1 else []
        batch_kinds = [h.kind_proto(kind) for kind, h in sorted(self._batch_handlers.items())]
        if self._mode == "stream":
            credit = self._concurrency + self._prefetch
            # A bound above the credit bounds nothing: the server takes none above it.
            caps = {kind: min(n, credit) for kind, n in self._kind_caps.items()}
            sreq = pb.StreamJobsRequest(worker=self.name, queue=self._queues[0], queues=queues, kinds=kinds,
                                        credit=credit, kind_concurrency=caps, batch_kinds=batch_kinds,
                                        fetch_parent_results=self._fetch_parent_results)
            set_duration(sreq.lease_timeout, self._lease)
            await self._stream_loop(sreq)
        else:
            preq = pb.ActivateRequest(worker=self.name, queue=self._queues[0], queues=queues, kinds=kinds, batch_kinds=batch_kinds,
                                      fetch_parent_results=self._fetch_parent_results)
            set_duration(preq.lease_timeout, self._lease)
            set_duration(preq.request_timeout, self._poll_wait)
            await self._poll_loop(preq)

    async def _learn_limits(self) -> bool:
        """_learn_limits asks the server for its input limits (ServerService.Info), which the
        worker makes its reports fit, again with backoff while the server cannot be reached. A
        server that serves none (or a limit the worker needs), or answers the call with another
        error (a server that predates it, something else at the URL), stops the worker with a
        NoLimitsError; one that refuses the key stops it as any refused call does. No job is
        taken before it ends: True with the limits known."""
        assert self._channel is not None
        info = _rpc.Service(self._channel, "ServerService")
        backoff = _backoff.Tracker("read the server's input limits", _backoff.WORK, self._log, self.name)
        while True:
            try:
                res = await info["Info"](pb.ServerServiceInfoRequest(), metadata=self._md, timeout=10)
            except grpc.RpcError as e:
                err = to_hopper_error(e)
                if is_refusal(err):
                    self._refused(err)
                    return False
                if not isinstance(err, Unavailable):
                    self._refused(NoLimitsError(self._url, cause=err))
                    return False
                await asyncio.sleep(backoff.fail(err))
                continue
            try:
                self._limits = limits_of(res.server.input_limits if res.server.HasField("input_limits") else None, self._url)
            except NoLimitsError as e:
                self._refused(e)
                return False
            backoff.succeed()
            return True

    def _served(self) -> Limits:
        """_served are the server's limits: only jobs taken once they are known are run."""
        if self._limits is None:
            raise RuntimeError("hopper: a job taken before the server's limits were known")
        return self._limits

    async def _stream_loop(self, req: pb.StreamJobsRequest) -> None:
        """_stream_loop keeps a job stream open, reopening it with backoff when it ends. A stream
        that worked (it delivered jobs, or stayed open for 10 s) resets the backoff."""
        backoff = _backoff.Tracker("job stream", _backoff.WORK, self._log, self.name)
        while True:
            try:
                await self._stream(req, backoff)
                err: HopperError = Unavailable("the server ended the stream")
            except (grpc.RpcError, HopperError, OSError, asyncio.TimeoutError) as e:
                err = Unavailable("job stream silent: no message for three keepalive periods; reconnecting") \
                    if isinstance(e, asyncio.TimeoutError) else to_hopper_error(e)
            if is_refusal(err) or isinstance(err, InvalidArgument):
                self._refused(err)  # asking again cannot help
                return
            await asyncio.sleep(backoff.fail(err))

    async def _stream(self, req: pb.StreamJobsRequest, backoff: _backoff.Tracker) -> None:
        call = self._call("StreamJobs", req)
        opened = time.monotonic()
        worked = False
        period = 0.0
        try:
            while True:
                if period > 0:
                    msg = await asyncio.wait_for(call.read(), _SILENT_KEEPALIVES * period)
                else:
                    msg = await call.read()
                if msg is grpc.aio.EOF:
                    return
                if msg.HasField("keepalive"):
                    period = msg.keepalive.seconds + msg.keepalive.nanos / 1e9
                if not worked and (msg.jobs or time.monotonic() - opened >= _STREAM_WORKED):
                    worked = True  # a keepalive alone does not show that it works
                    backoff.succeed()
                for unit in grouped(msg.jobs):  # a batch comes in one message: its parts pushed apart are batches of their own
                    if not self._admit(unit):
                        for job in unit:
                            self._decline(job)  # pushed while stopping
        finally:
            call.cancel()

    async def _poll_loop(self, req: pb.ActivateRequest) -> None:
        """_poll_loop asks for as many jobs as there are free slots, each poll waiting for a
        first job. A failed poll is retried with backoff. With kinds capped (kind_concurrency)
        a poll leaves out the saturated ones and asks for no more jobs than the capped kinds it
        names have room for; while it leaves one out it waits at most 0.5 s, so that the kind's
        jobs are asked for again soon after one ends; when every kind is saturated, the worker
        polls again once a job of one ends."""
        backoff = _backoff.Tracker("activate jobs", _backoff.WORK, self._log, self.name)
        kinds = list(req.kinds)
        batch_kinds = list(req.batch_kinds)
        assert self._kind_freed is not None
        while True:
            n = await self._free_slots()
            if self._governor is not None and self._governor.holding:
                await self._governor.until_open()
                continue
            ask = self._kinds.ask(kinds, n)
            if ask is None:  # every kind is saturated: poll again once one has room
                self._kind_freed.clear()
                await self._kind_freed.wait()
                continue
            asked, req.max_jobs, saturated = ask
            del req.kinds[:]
            req.kinds.extend(asked)
            # A batch kind left out (saturated) is left out of batch_kinds too: each must be one of kinds.
            del req.batch_kinds[:]
            req.batch_kinds.extend(bk for bk in batch_kinds if bk.kind in asked)
            set_duration(req.request_timeout, min(self._poll_wait, _SATURATED_POLL_WAIT) if saturated else self._poll_wait)
            try:
                res = await self._call("Activate", req, timeout=self._poll_wait + 30)
            except grpc.RpcError as e:
                err = to_hopper_error(e)
                if is_refusal(err) or isinstance(err, InvalidArgument):
                    self._refused(err)  # asking again cannot help: the worker's own requests are refused
                    return
                await asyncio.sleep(backoff.fail(err))
                continue
            backoff.succeed()
            # A batch (the poll cut it to the free slots) takes a slot per job, held until its
            # handler returns.
            for unit in grouped(res.jobs):
                for job in unit:
                    self._busy += 1
                    self._kinds.take(job.kind)
                freed = self._poll_slot_freed([job.kind for job in unit])
                if not self._launch(unit, freed):
                    freed()
                    for job in unit:
                        self._spawn(self._release(job, "worker stopping"))

    def _poll_slot_freed(self, kinds: list[str]) -> Callable[[], None]:
        """_poll_slot_freed is what frees the slots of polled jobs of kinds (a job's, or a
        batch's), and their kinds' room, once."""

        def free() -> None:
            for kind in kinds:
                self._kinds.give(kind)
                self._busy -= 1
            assert self._freed is not None
            self._freed.set()

        return _once(free)

    async def _free_slots(self) -> int:
        """_free_slots waits for a free slot and returns how many are free. A busy worker frees
        its slots one job at a time: when fewer than a quarter are free, it waits a moment
        (2 ms) for more, so that one poll fills several slots."""
        assert self._freed is not None
        size = self._concurrency
        while self._busy >= size:
            self._freed.clear()
            await self._freed.wait()
        enough = max(size // 4, 1)
        if size - self._busy < enough:
            deadline = time.monotonic() + _POLL_COALESCE
            while size - self._busy < enough:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._freed.clear()
                try:
                    await asyncio.wait_for(self._freed.wait(), left)
                except asyncio.TimeoutError:
                    break
        return size - self._busy

    def _admit(self, jobs: list[pb.ActivatedJob]) -> bool:
        """_admit takes a job pushed on the stream, or a batch's jobs: it starts at once on a
        free slot (a batch takes one) if its kind has room (kind_concurrency), else waits for
        both (prefetch: the server pushes no more than the stream's credit); False when the
        worker is stopping."""
        if self._state != "started":
            return False
        kind = jobs[0].kind
        unit = self._attempts_of(jobs, lambda: self._stream_slot_freed(kind))
        if self._busy < self._concurrency and self._kinds.room(kind):
            self._busy += 1
            self._kinds.take(kind)
            self._run(unit)
        else:
            self._waiting.append(unit)
        return True

    def _attempts_of(self, jobs: list[pb.ActivatedJob], handled: Callable[[], None]) -> list[_Attempt]:
        """_attempts_of makes the attempts of jobs (a job, or a batch's), the first calling handled."""
        return [_Attempt(j, self._lease, handled if i == 0 else None, self._served()) for i, j in enumerate(jobs)]

    def _stream_slot_freed(self, kind: str) -> None:
        """_stream_slot_freed hands the slot of a job of kind whose handler returned, and its
        kind's room, to the job that has waited longest whose kind has room. A job whose lease
        was lost while it waited is released instead (refused, which frees its credit)."""
        self._kinds.give(kind)
        i = 0
        while i < len(self._waiting) and self._state == "started":
            unit = self._waiting[i]
            alive = any(a.cause is None for a in unit)
            kind = unit[0].job.kind
            if alive and not self._kinds.room(kind):
                i += 1  # its kind has no room: it waits for a job of its kind to end
                continue
            del self._waiting[i]
            if alive:
                self._kinds.take(kind)
                self._run(unit)
                return
            for a in unit:
                self._spawn(self._release(a.job, "lease lost while waiting for a slot"))
        self._busy -= 1

    def _launch(self, jobs: list[pb.ActivatedJob], handled: Callable[[], None]) -> bool:
        if self._state != "started":
            return False
        self._run(self._attempts_of(jobs, handled))
        return True

    def _decline(self, job: pb.ActivatedJob) -> None:
        self._declined.append(job)
        if self._pushed is not None:
            self._pushed.set()

    async def _release_declined(self) -> None:
        jobs, self._declined = self._declined, []
        for i in range(0, len(jobs), 16):
            await asyncio.gather(*(self._release(j, "worker stopping") for j in jobs[i:i + 16]))

    async def _release(self, job: pb.ActivatedJob, why: str) -> None:
        """_release hands a job this worker will not run back to its queue, with one try."""
        reason = clip_text(why, self._served().reason_bytes)
        try:
            await self._report(pb.Outcome(release=pb.ReleaseRequest(id=job.id, lease_token=job.lease_token, reason=reason)), _REPORT_TIMEOUT)
        except HopperError as err:
            if not isinstance(err, FailedPrecondition):
                self._log.warning("hopper: release job %s: %s", job.id, err)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        assert self._loop is not None
        t: asyncio.Task[None] = self._loop.create_task(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)

    # A governor's hold reaches the server (WorkerService.Hold): in stream mode the server then
    # claims nothing for the worker's stream, which stays open, while its running jobs go on;
    # in poll mode the worker does not poll and the server ends a poll already waiting. A hold
    # is repeated every 10 s: the server lets one lapse 30 s after it last heard of it
    # (remote/govern.go).

    async def _report_holds(self, gov: _governor.Governor) -> None:
        backoff = _backoff.Tracker("tell the server the governor's hold", _backoff.LOOP, self._log, self.name)
        told = False  # what the server last heard: it assumes a worker is not held
        queues = self._queues if len(self._queues) > 1 else []
        while True:
            holding = gov.holding
            wait: float | None = None  # none: wait for a change
            gov.changed.clear()
            if holding or told:
                try:
                    await self._call("Hold", pb.HoldRequest(worker=self.name, queue=self._queues[0], queues=queues, held=holding), timeout=_BATCH_TIMEOUT)
                    backoff.succeed()
                    told = holding
                    wait = _HOLD_REFRESH if holding else None
                except grpc.RpcError as e:
                    err = to_hopper_error(e)
                    if is_refusal(err):
                        self._refused(err)
                        return
                    wait = backoff.fail(err)
            if gov.holding != holding:
                continue
            try:
                await asyncio.wait_for(gov.changed.wait(), wait)
            except asyncio.TimeoutError:
                pass

    # ---- running an attempt ----

    def _run(self, unit: list[_Attempt]) -> None:
        """_run starts the handler of unit: a job's, or a batch's (the jobs of a batch kind,
        even one the server sent alone, run in a batch)."""
        assert self._loop is not None
        a = unit[0]
        if a.job.kind in self._batch_handlers:
            done = self._loop.create_future()
            task = self._loop.create_task(self._execute_batch(unit, done))
            for b in unit:
                self._attempts[b.key] = b
                b.done, b.task = done, task  # b.task keeps the task; only the batch's on_abort cancels it
            return
        self._attempts[a.key] = a
        a.done = self._loop.create_future()
        a.task = self._loop.create_task(self._execute(a))

    async def _conclude(self, a: _Attempt, ending: Ending, run_time: float) -> None:
        """_conclude decides what a's ending does and acts on it: reports the outcome, keeps the
        job to release, or nothing; the observer hears the attempt end."""
        j = a.job
        decision = decide(ending)
        self._observe(WorkerEvent("ended", j.id, j.kind, j.queue, j.attempt, outcome_name(decision), run_time))
        if decision.action == "decline":
            self._decline(j)
        elif decision.action == "report":
            await self._flush_pending(a, time.monotonic() + _REPORT_TIMEOUT)
            await self._report_or_fail(decision, a.limits)

    async def _execute(self, a: _Attempt) -> None:
        j = a.job
        try:
            self._observe(WorkerEvent("started", j.id, j.kind, j.queue, j.attempt))
            began = time.monotonic()
            ending = await self._handle(a)
            run_time = time.monotonic() - began
            a.handled()  # a slot is free while the outcome is on its way
            await self._conclude(a, ending, run_time)
        except Exception as err:  # noqa: BLE001 - a worker's bug must not leak the attempt
            self._log.error("hopper: run job %s: %s", j.id, err)
        finally:
            self._attempts.pop(a.key, None)
            a.handled()
            if a.done is not None and not a.done.done():
                a.done.set_result(None)

    async def _handle(self, a: _Attempt) -> Ending:
        """_handle calls a's handler within the attempt's execution limit and says how it ended."""
        j = a.job
        h = self._handlers.get(j.kind)
        ending = Ending(j.id, j.lease_token, self._mode, limits=a.limits, kind_policy=h.policy if h else None)
        timeout = _seconds(j, "timeout") or (h.timeout if h else None) or _seconds(j, "default_timeout") or None
        a.timeout = timeout
        loop = self._loop
        assert loop is not None
        timer = loop.call_later(timeout, a.abort, JobTimeout(timeout)) if timeout else None
        token = None
        try:
            if h is None:
                raise NoRetry(f'no handler for kind "{j.kind}"')
            try:
                args = decode_json(j.args)
            except ValueError as err:
                raise NoRetry(f'decode args of kind "{j.kind}": {err}') from err
            job = RunningJob(self, a, {} if args is None else args)
            otel = _trace_context(job.headers)
            if h.is_async:
                if otel is not None and _otel_context is not None:
                    token = _otel_context.attach(otel)
                if a.cause is not None:  # stopped before it started (a lease lost while waiting)
                    raise asyncio.CancelledError()
                a.cancellable = True
                try:
                    ending.result = await h.fn(job)
                finally:
                    a.cancellable = False
            else:
                ctx = contextvars.copy_context()
                assert self._pool is not None
                ending.result = await loop.run_in_executor(self._pool, ctx.run, _call_sync, h.fn, SyncRunningJob(job, loop), otel)
        except asyncio.CancelledError as err:
            t = asyncio.current_task()
            cancelling = getattr(t, "cancelling", None)
            if a.cause is None and callable(cancelling) and cancelling() > 0:
                raise  # the task itself is being cancelled (the loop is closing), not the attempt
            if a.cause is not None and t is not None and hasattr(t, "uncancel"):
                t.uncancel()
            # Told to stop (a.cause), or a CancelledError of the handler's own: an outcome.
            ending.raised, ending.error = True, err
        except Exception as err:  # noqa: BLE001 - every error a handler raises is an outcome
            ending.raised, ending.error = True, err
        finally:
            if timer is not None:
                timer.cancel()
            if token is not None and _otel_context is not None:
                _otel_context.detach(token)
        ending.cause = a.cause
        return ending

    async def _execute_batch(self, unit: list[_Attempt], done: asyncio.Future[None]) -> None:
        """_execute_batch runs the attempts of one batch with one call of their kind's batch
        handler and concludes each as a lone attempt's."""
        try:
            began = time.monotonic()
            endings = await self._handle_batch(unit)
            run_time = time.monotonic() - began
            for a in unit:
                a.handled()  # the slots are free while the outcomes are on their way
            await asyncio.gather(*(self._conclude(a, e, run_time) for a, e in zip(unit, endings)))
        except Exception as err:  # noqa: BLE001 - a worker's bug must not leak the attempts
            self._log.error("hopper: run batch of job %s: %s", unit[0].job.id, err)
        finally:
            for a in unit:
                self._attempts.pop(a.key, None)
                a.handled()
            if not done.done():
                done.set_result(None)

    async def _handle_batch(self, unit: list[_Attempt]) -> list[Ending]:
        """_handle_batch calls the batch handler of unit's kind for its jobs, within the batch's
        timeout (the shortest of its jobs'), and says how each ended. A job whose args do not
        decode fails alone without retry; a job told to stop before the call (its lease lost)
        does not join it. What the handler raises fails every job that joined."""
        h = self._batch_handlers.get(unit[0].job.kind)
        endings = [Ending(a.job.id, a.job.lease_token, self._mode, limits=a.limits, kind_policy=h.policy if h else None) for a in unit]
        members: list[tuple[_Attempt, Ending, RunningJob]] = []
        for a, e in zip(unit, endings):
            j = a.job
            self._observe(WorkerEvent("started", j.id, j.kind, j.queue, j.attempt))
            try:
                if h is None:
                    raise NoRetry(f'no batch handler for kind "{j.kind}"')
                if a.cause is not None:
                    e.raised, e.error = True, a.cause
                    continue
                try:
                    args = decode_json(j.args)
                except ValueError as err:
                    raise NoRetry(f'decode args of kind "{j.kind}": {err}') from err
                members.append((a, e, RunningJob(self, a, {} if args is None else args)))
            except Exception as err:  # noqa: BLE001 - an outcome of this job alone
                e.raised, e.error = True, err
        if h is not None and members:
            await self._call_batch(h, members)
        for a, e in zip(unit, endings):
            e.cause = a.cause
        return endings

    async def _call_batch(self, h: _BatchHandler, members: list[tuple[_Attempt, Ending, RunningJob]]) -> None:
        loop = self._loop
        assert loop is not None
        timeout: float | None = None
        for a, _, _ in members:
            t = _seconds(a.job, "timeout") or h.timeout or _seconds(a.job, "default_timeout") or None
            if t and (timeout is None or t < timeout):
                timeout = t
        attempts = [a for a, _, _ in members]

        def stopped() -> bool:
            return all(a.cause is not None for a in attempts)

        task = asyncio.current_task()
        cancellable = False

        def on_abort() -> None:  # every job told to stop stops an async handler's call
            if cancellable and task is not None and stopped():
                task.cancel()

        for a in attempts:
            a.timeout = timeout
            a.on_abort = on_abort
        def time_out(limit: float) -> None:
            for a in attempts:
                a.abort(JobTimeout(limit))

        timer = loop.call_later(timeout, time_out, timeout) if timeout else None
        jobs = [job for _, _, job in members]
        try:
            if h.is_async:
                batch: Batch[Any] = Batch(jobs, stopped)
                cancellable = True
                try:
                    await h.fn(batch)
                finally:
                    cancellable = False
            else:
                batch = Batch([SyncRunningJob(job, loop) for job in jobs], stopped)
                assert self._pool is not None
                await loop.run_in_executor(self._pool, contextvars.copy_context().run, h.fn, batch)
        except asyncio.CancelledError as err:
            cancelling = getattr(task, "cancelling", None)
            if not stopped() and callable(cancelling) and cancelling() > 0:
                raise  # the task itself is being cancelled (the loop is closing), not the batch
            if stopped() and task is not None and hasattr(task, "uncancel"):
                task.uncancel()
            for _, e, _ in members:
                e.raised, e.error = True, err
        except Exception as err:  # noqa: BLE001 - every job fails, each as its own attempt
            for _, e, _ in members:
                e.raised, e.error = True, err
        else:
            for k, (_, e, _) in enumerate(members):
                failed, e.result = batch._outcome(k)
                if failed is not None:
                    e.raised, e.error = True, failed
        finally:
            if timer is not None:
                timer.cancel()
            for a in attempts:
                a.on_abort = None

    def _observe(self, ev: WorkerEvent) -> None:
        if self._observer is None:
            return
        try:
            self._observer(ev)
        except Exception as err:  # noqa: BLE001
            self._log.error("hopper: job observer raised: %s", err)

    async def _flush_pending(self, a: _Attempt, deadline: float) -> None:
        """_flush_pending sends the progress or heartbeat a's handler made while the server could
        not be reached, retrying until the server answers or deadline: after the outcome it
        would be refused, the lease gone."""
        n = 0
        while True:
            n += 1
            try:
                await self._send_pending(a)
                return
            except HopperError as err:
                if is_refusal(err):
                    self._refused(err)
                    return
                wait = _backoff.delay(_backoff.REPORT, n)
                if not isinstance(err, Unavailable) or time.monotonic() + wait >= deadline:
                    if not isinstance(err, (FailedPrecondition, NotFound)):
                        self._log.warning("hopper: report kept progress of job %s: %s", a.job.id, err)
                    return
                await asyncio.sleep(wait)

    async def _report_or_fail(self, d: Decision, limits: Limits) -> None:
        """_report_or_fail reports an outcome until the server gives a verdict. When the server
        refuses the outcome as the handler gave it (a suspension deadline already past, say),
        the attempt fails with the server's reason instead."""
        assert d.outcome is not None
        deadline = time.monotonic() + _REPORT_TIMEOUT
        try:
            try:
                await self._report_until_verdict(d.outcome, deadline)
            except InvalidArgument as err:
                which = d.outcome.WhichOneof("outcome")
                ref = getattr(d.outcome, str(which))
                error = clip_text(f"the server refused the attempt's outcome: {err}", limits.error_bytes)
                fail = pb.FailRequest(id=ref.id, lease_token=ref.lease_token, outcome="error", error=error)
                await self._report_until_verdict(pb.Outcome(fail=fail), deadline)
        except HopperError as err:
            if is_refusal(err):
                self._refused(err)
            else:
                self._log.error("hopper: report job outcome: %s", err)

    async def _report_until_verdict(self, o: pb.Outcome, deadline: float) -> None:
        """_report_until_verdict reports o until the server gives a verdict: a lost report would
        leave the job running on the server with nobody on it. Its lease gone or the job
        unknown: it returns; refused (InvalidArgument, PermissionDenied, Unauthenticated): it
        raises. An unreachable server and other errors are retried with backoff until deadline."""
        n = 0
        while True:
            n += 1
            try:
                await self._report(o, max(deadline - time.monotonic(), 0.001))
                return
            except (FailedPrecondition, NotFound):
                return  # the job is no longer this attempt's
            except HopperError as err:
                if isinstance(err, InvalidArgument) or is_refusal(err):
                    raise
                wait = _backoff.delay(_backoff.REPORT, n)
                if time.monotonic() + wait >= deadline:
                    raise
                await asyncio.sleep(wait)

    # ---- batched reports ----
    # Outcomes go to the server in batches (WorkerService.Report), each item still fenced by
    # its own lease token and answered with its own verdict. There is no timer: the first
    # outcome to find a free request slot sends what is waiting, and keeps sending while more
    # arrived meanwhile (remote/batch.go).

    def _report(self, o: pb.Outcome, timeout: float) -> asyncio.Future[None]:
        assert self._loop is not None
        fut: asyncio.Future[None] = self._loop.create_future()
        self._batch.append((o, time.monotonic() + timeout, fut))
        if self._sending < _BATCH_SLOTS:
            self._sending += 1
            self._spawn(self._flush())
        return fut

    async def _flush(self) -> None:
        try:
            while True:
                now = time.monotonic()
                batch: list[tuple[pb.Outcome, float, asyncio.Future[None]]] = []
                i = 0
                while i < len(self._batch) and len(batch) < _MAX_BATCH:
                    item = self._batch[i]
                    i += 1
                    if item[1] < now:
                        _settle_future(item[2], error_of("deadline_exceeded", "report: gave up waiting to be sent"))
                    else:
                        batch.append(item)
                del self._batch[:i]
                if not batch:
                    return
                await self._send(batch)
        finally:
            self._sending -= 1

    async def _send(self, batch: list[tuple[pb.Outcome, float, asyncio.Future[None]]]) -> None:
        err: HopperError | None = None
        res: Any = None
        try:
            res = await self._call("Report", pb.ReportRequest(outcomes=[b[0] for b in batch]), timeout=_BATCH_TIMEOUT)
            if len(res.outcomes) != len(batch):
                err = Internal("report: the server answered a different number of verdicts")
        except grpc.RpcError as e:
            err = to_hopper_error(e)
        except asyncio.CancelledError:
            err = Unavailable("report: canceled")
        for i, (_, _, fut) in enumerate(batch):
            _settle_future(fut, err if err is not None else _verdict_error(res.outcomes[i]))

    # ---- leases ----
    # The worker keeps its jobs' leases alive, in stream mode as in poll mode: renewals every
    # third of the shortest lease held, on a fixed beat; a lease a handler shortens wakes the
    # keeper; a failed renewal is retried with backoff, never later than the cadence
    # (internal/lease, clients/typescript/src/lease-keeper.ts).

    def _leases_shortened(self) -> None:
        if self._woken is not None:
            self._woken.set()

    def _held(self) -> list[_Attempt]:
        return list(self._attempts.values()) + [a for unit in self._waiting for a in unit]  # a waiting job's lease is the worker's too

    def _cadence(self) -> float:
        d = self._lease
        for a in self._held():
            d = min(d, a.lease)
        return max(d / 3, 0.001)

    async def _keep_leases(self) -> None:
        assert self._woken is not None
        backoff = _backoff.Tracker("extend leases", _backoff.LOOP, self._log, self.name)
        last = time.monotonic()
        retry_in = 0.0
        while True:
            nxt = max(last + self._cadence(), time.monotonic())
            if retry_in > 0:
                nxt = time.monotonic() + min(retry_in, self._cadence())
            while True:  # sleep until nxt; a lease shortened meanwhile brings it forward
                left = nxt - time.monotonic()
                if left <= 0:
                    break
                self._woken.clear()
                try:
                    await asyncio.wait_for(self._woken.wait(), left)
                except asyncio.TimeoutError:
                    break
                nxt = min(nxt, last + self._cadence())
            last = nxt
            retry_in = 0.0
            try:
                if await self._renew_all() > 0:
                    backoff.succeed()
            except HopperError as err:
                if is_refusal(err):
                    self._refused(err)
                    return
                retry_in = backoff.fail(err)

    async def _renew_all(self) -> int:
        """_renew_all renews the lease of every running attempt, each for its own duration, in
        Report batches. A lease found lost stops its handler with a LeaseLostError."""
        held = self._held()
        timeout = min([self._lease] + [a.lease for a in held])
        for i in range(0, len(held), _MAX_BATCH):
            batch = held[i:i + _MAX_BATCH]
            renewals = []
            for a in batch:
                r = pb.ExtendLeaseRequest(id=a.job.id, lease_token=a.job.lease_token)
                set_duration(r.duration, a.lease)
                renewals.append(r)
            try:
                res = await self._call("Report", pb.ReportRequest(renewals=renewals), timeout=timeout)
            except grpc.RpcError as e:
                raise to_hopper_error(e) from e
            if len(res.renewals) != len(batch):
                raise Internal("extend leases: the server answered a different number of verdicts")
            for a, v in zip(batch, res.renewals):
                if v.code in ("failed_precondition", "not_found"):
                    a.abort(LeaseLostError())
        return len(held)


def _settle_future(fut: asyncio.Future[None], err: BaseException | None) -> None:
    if fut.done():
        return
    if err is None:
        fut.set_result(None)
    else:
        fut.set_exception(err)


def _verdict_error(v: pb.Verdict) -> HopperError | None:
    """_verdict_error is a verdict as the error the single call would have raised; None for "ok"."""
    if v.code == "ok":
        return None
    return error_of(v.code, v.message)


def _seconds(msg: Any, name: str) -> float:
    if not msg.HasField(name):
        return 0.0
    d = getattr(msg, name)
    return float(d.seconds + d.nanos / 1e9)


def _trace_context(headers: Mapping[str, str]) -> Any:
    """_trace_context is the OpenTelemetry context the job's headers carry (traceparent), when
    opentelemetry is installed and they carry one."""
    if _otel_propagate is None or "traceparent" not in headers:
        return None
    return _otel_propagate.extract(headers)


def _call_sync(fn: Callable[[Any], Any], job: SyncRunningJob, otel: Any) -> Any:
    token = _otel_context.attach(otel) if otel is not None and _otel_context is not None else None
    try:
        return fn(job)
    finally:
        if token is not None and _otel_context is not None:
            _otel_context.detach(token)


Handlers = Mapping[str, Union[Handler, HandlerOptions]]
