"""How an attempt ended. The worker says what its handler did — returned, raised, ran out of
time, crashed — and the server decides what that does to the job (the retry, its wait, a dead
letter), as it does for the Go worker and in process. These are the Go worker's rules, as the
TypeScript SDK has them (clients/typescript/src/outcome.ts)."""

from __future__ import annotations

import asyncio
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from ._json import encode_json
from .gen import hopper_pb2 as pb
from .handler_errors import (
    BusinessError, CheckpointError, JobTimeout, LeaseLostError, NoRetry, RetryAfter, Shutdown, Snooze, Suspend,
)
from .text import Limits, clip_text, error_code_problem

Mode = Literal["stream", "poll"]


@dataclass
class Ending:
    """Ending is how an attempt's handler ended."""

    id: str
    lease_token: int
    mode: Mode
    raised: bool = False
    result: Any = None
    error: BaseException | None = None
    cause: BaseException | None = None
    """cause is why the attempt was told to stop, if it was."""
    kind_policy: pb.RetryPolicy | None = None
    limits: Limits = field(kw_only=True)
    """limits are the server's, which the report is made to fit (required, by name)."""


Action = Literal["report", "decline", "none"]


@dataclass
class Decision:
    """Decision is what to do with an ended attempt: report outcome until the server gives a
    verdict; keep the job, to release once the stream is closed (a stopping worker's); or
    nothing (the job is no longer ours)."""

    action: Action
    outcome: pb.Outcome | None = None


def decide(e: Ending, now: float | None = None) -> Decision:
    """decide is what to do with an ended attempt."""
    now = time.time() if now is None else now
    if isinstance(e.cause, LeaseLostError):
        # The job is no longer ours: nothing of what the handler did counts. In stream mode,
        # saying so frees the job's credit (the server answers FAILED_PRECONDITION).
        if e.mode == "stream":
            return _report(pb.Outcome(release=pb.ReleaseRequest(id=e.id, lease_token=e.lease_token, reason="lease lost")))
        return Decision("none")
    if not e.raised:
        # Reported whatever else stopped the attempt meanwhile: a success is never thrown away.
        try:
            result = encode_json(e.result)
        except (TypeError, ValueError) as err:
            return _report(failure(_with(e, RuntimeError(f"encode result: {describe(err)}"))))
        return _report(pb.Outcome(complete=pb.CompleteRequest(id=e.id, lease_token=e.lease_token, result=result)))
    parked = _park_outcome(e, now)
    if isinstance(parked, BaseException):
        return _report(failure(_with(e, parked)))
    if parked is not None:
        return _report(parked)  # even on the way out: a snooze or suspension keeps its checkpoint
    if isinstance(e.cause, Shutdown):
        if e.mode == "stream":
            return Decision("decline")  # released once the stream is closed
        reason = clip_text(f"released on shutdown: {describe(e.error)}", e.limits.reason_bytes)
        return _report(pb.Outcome(release=pb.ReleaseRequest(id=e.id, lease_token=e.lease_token, reason=reason)))
    return _report(failure(e))


def _report(o: pb.Outcome | pb.FailRequest) -> Decision:
    if isinstance(o, pb.FailRequest):
        o = pb.Outcome(fail=o)
    return Decision("report", o)


def _with(e: Ending, error: BaseException) -> Ending:
    return Ending(e.id, e.lease_token, e.mode, True, None, error, e.cause, e.kind_policy, limits=e.limits)


def _park_outcome(e: Ending, now: float) -> pb.Outcome | BaseException | None:
    err = e.error
    if isinstance(err, Snooze):
        snooze = pb.SnoozeRequest(id=e.id, lease_token=e.lease_token)
        snooze.delay.FromNanoseconds(int(bound_delay(err.delay, e.limits) * 1e9))
        return pb.Outcome(snooze=snooze)
    if not isinstance(err, Suspend):
        return None
    s = pb.SuspendRequest(id=e.id, lease_token=e.lease_token)
    if err.has_checkpoint:
        try:
            s.checkpoint = encode_json(err.checkpoint)
        except (TypeError, ValueError) as x:
            return RuntimeError(f"encode checkpoint: {describe(x)}")
    if err.until is not None:
        s.until.FromNanoseconds(int(bound_until(err.until.timestamp(), now, e.limits) * 1e9))
    if err.deadline is not None:
        s.deadline.FromNanoseconds(int(err.deadline.timestamp() * 1e9))
    return pb.Outcome(suspend=s)


def failure(e: Ending) -> pb.FailRequest:
    """failure says how an attempt failed. The texts are made to fit what the server takes, so
    an odd or huge error message never makes the report itself fail."""
    limits = e.limits
    err = e.error
    if isinstance(err, CheckpointError):
        return _with_checkpoint(failure(_with(e, err.error)), err.checkpoint, limits)
    out = pb.FailRequest(id=e.id, lease_token=e.lease_token, outcome="error")
    text = describe(err)
    if is_crash(err):
        out.outcome = "panic"
    elif isinstance(e.cause, JobTimeout):
        out.outcome = "timeout"
        # As the Go worker says it: "job execution timeout after 5s: <the handler's error>".
        if err is not e.cause and not isinstance(err, asyncio.CancelledError):
            text = f"{e.cause}: {text}"
        else:
            text = str(e.cause)
    if isinstance(err, NoRetry) and text:
        text = f"not retryable: {text}"  # as the Go worker words it
    out.error = clip_text(text, limits.error_bytes) or f"{type(err).__name__} with an empty message"
    stack = stack_of(err)
    if stack:
        out.stack = clip_text(stack, limits.error_bytes)
    if isinstance(err, NoRetry):
        out.no_retry = True
    if isinstance(err, RetryAfter):
        out.retry_backoff.FromNanoseconds(int(bound_delay(err.delay, limits) * 1e9))
    if e.kind_policy is not None:
        out.retry_policy.CopyFrom(e.kind_policy)
    if isinstance(err, BusinessError):
        # As the Go worker does: a code the server would refuse makes a plain error that says why.
        problem = error_code_problem(err.code, limits)
        if problem:
            out.error = clip_text(f"{out.error} (not a business error: {problem})", limits.error_bytes)
        else:
            out.error_code = err.code
    return out


def _with_checkpoint(f: pb.FailRequest, checkpoint: Any, limits: Limits) -> pb.FailRequest:
    if checkpoint is None:
        return f
    try:
        f.checkpoint = encode_json(checkpoint)
    except (TypeError, ValueError) as err:
        f.error = clip_text(f"{f.error} (checkpoint dropped: encode checkpoint: {describe(err)})", limits.error_bytes)
    return f


# What Python raises for a bug rather than an error a handler chose to raise: the attempt's
# outcome is then "panic", as for a Go handler that panics (a nil dereference, an index out of
# range, a division by zero).
CRASHES: tuple[type[BaseException], ...] = (
    TypeError, NameError, AttributeError, IndexError, KeyError, ZeroDivisionError, RecursionError,
    AssertionError, SyntaxError, SystemError, MemoryError,
)


def is_crash(err: BaseException | None) -> bool:
    """is_crash says whether err is what Python raises for a bug (a TypeError, an AttributeError
    on None, a KeyError, an IndexError, a ZeroDivisionError, a RecursionError, ...): the
    attempt's outcome is then "panic", as for a Go handler that panics."""
    return isinstance(err, CRASHES)


_SDK_ERRORS = (NoRetry, RetryAfter, JobTimeout, LeaseLostError, Shutdown, Snooze, Suspend, BusinessError)


def describe(err: BaseException | None) -> str:
    """describe is an error's text as an attempt records it: its message, after its type's name
    unless it is a plain Exception or one of the SDK's ("KeyError: 'x'", "rate limited")."""
    if err is None:
        return "None"
    if type(err) is Exception or isinstance(err, _SDK_ERRORS):
        return str(err)
    if isinstance(err, asyncio.CancelledError):
        return "handler canceled"
    msg = str(err)
    return f"{type(err).__name__}: {msg}" if msg else ""


def stack_of(err: BaseException | None) -> str:
    """stack_of is where err was raised; none for the SDK's own errors, which are outcomes, not faults."""
    if err is None or isinstance(err, _SDK_ERRORS) or err.__traceback__ is None:
        return ""
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


# The server takes delays and times up to its limits.run_at_future ahead and none in
# the past: outcomes are reported within them, so a snooze of a century or a suspension until
# 1970 ends its attempt rather than being refused.
_CLOCK_SLACK = 3600.0  # room for the server's clock to be ahead of this one


def bound_delay(s: float, limits: Limits) -> float:
    """bound_delay is s seconds within 0 and the server's furthest delay."""
    if s != s:  # NaN
        return 0.0
    return min(max(s, 0.0), limits.run_at_future)


def bound_until(t: float, now: float, limits: Limits) -> float:
    """bound_until is the time t (seconds since the epoch) within now and the server's furthest time (less an hour)."""
    if t != t:
        return now
    return min(max(t, now), now + limits.run_at_future - _CLOCK_SLACK)


def outcome_name(d: Decision) -> str:
    """outcome_name names how an attempt ended: ok, error, panic, timeout, snoozed, suspended, canceled."""
    if d.action != "report" or d.outcome is None:
        return "canceled"
    which = d.outcome.WhichOneof("outcome")
    if which == "complete":
        return "ok"
    if which == "fail":
        return str(d.outcome.fail.outcome)
    if which == "snooze":
        return "snoozed"
    if which == "suspend":
        return "suspended"
    return "canceled"


def utc(t: float) -> datetime:
    return datetime.fromtimestamp(t, timezone.utc)
