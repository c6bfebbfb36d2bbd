"""What a handler raises to decide its attempt's outcome, and why its attempt is told to stop."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

__all__ = [
    "NoRetry", "RetryAfter", "BusinessError", "CheckpointError", "fail_with_checkpoint", "Snooze", "Suspend",
    "JobTimeout", "LeaseLostError", "Shutdown", "seconds",
]


def seconds(d: float | timedelta) -> float:
    """seconds is d (a timedelta, or seconds) in seconds."""
    return d.total_seconds() if isinstance(d, timedelta) else float(d)


def format_duration(s: float) -> str:
    """format_duration renders s seconds as Go prints a duration ("250ms", "1.5s", "1m30s",
    "2h0m0s"), so that messages read the same from every worker."""
    if s != s or s in (float("inf"), float("-inf")):
        return str(s)
    if s < 0:
        return "-" + format_duration(-s)
    if s == 0:
        return "0s"
    if s < 1e-6:
        return f"{_trim(s * 1e9)}ns"
    if s < 1e-3:
        return f"{_trim(s * 1e6)}µs"
    if s < 1:
        return f"{_trim(s * 1e3)}ms"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    tail = f"{_trim(sec)}s"
    if h > 0:
        return f"{int(h)}h{int(m)}m{tail}"
    return f"{int(m)}m{tail}" if m > 0 else tail


def _trim(n: float) -> str:
    """_trim is n with at most 6 decimals and no trailing zeros."""
    t = f"{round(n, 6):.6f}".rstrip("0").rstrip(".")
    return t or "0"


_fmt = format_duration


class NoRetry(Exception):
    """NoRetry, raised by a handler, fails the job at once, whatever attempts it has left."""


class RetryAfter(Exception):
    """RetryAfter, raised by a handler, retries the job after delay instead of its backoff. The
    attempt still counts: with none left, the job fails."""

    def __init__(self, delay: float | timedelta, message: str | None = None) -> None:
        self.delay = seconds(delay)
        # A message follows "retry after <delay>: ", as a Go worker words it.
        prefix = f"retry after {_fmt(self.delay)}"
        super().__init__(f"{prefix}: {message}" if message else prefix)


class BusinessError(Exception):
    """BusinessError, raised by a handler, fails the job for good with an error code that is part
    of its contract: no retry, whatever attempts are left, unless the job's, the kind's or the
    server's retry policy sets retry_business_errors. The code (1–128 letters, digits, "_",
    "-", ".", ":") is kept with the attempt and as the job's last_error_code; with another code
    the attempt fails as a plain error whose text says why.

        raise BusinessError("card_declined", "insufficient funds")
    """

    def __init__(self, code: str, detail: str = "") -> None:
        self.code = code
        super().__init__(f"{code}: {detail}" if detail else code)


class CheckpointError(Exception):
    """CheckpointError fails the attempt as error alone would (a NoRetry, RetryAfter or
    BusinessError inside still counts) and hands checkpoint (any JSON value) to the next
    attempt as job.checkpoint. Raise it with fail_with_checkpoint."""

    def __init__(self, error: BaseException, checkpoint: Any) -> None:
        self.error = error
        self.checkpoint = checkpoint
        super().__init__(str(error))


def fail_with_checkpoint(error: BaseException, checkpoint: Any) -> CheckpointError:
    """fail_with_checkpoint is the error to raise to fail an attempt with error and leave
    checkpoint for the next one: raise fail_with_checkpoint(RuntimeError("part 4"), {"done": 3})."""
    return CheckpointError(error, checkpoint)


class Snooze(Exception):
    """Snooze, raised by a handler, ends the attempt with "not now": the job runs again after
    delay, without consuming an attempt."""

    def __init__(self, delay: float | timedelta) -> None:
        self.delay = seconds(delay)
        super().__init__(f"snoozed for {_fmt(self.delay)}")


class Suspend(Exception):
    """Suspend, raised by a handler, parks the job without consuming an attempt: until until, or
    until Client.resume. The next attempt, on any worker, gets checkpoint (any JSON value;
    unset keeps the previous one). deadline, for a job parked until resumed: still suspended
    then, it fails."""

    _unset: Any = object()

    def __init__(self, *, checkpoint: Any = _unset, until: datetime | None = None, deadline: datetime | None = None) -> None:
        self.checkpoint = checkpoint
        self.has_checkpoint = checkpoint is not Suspend._unset
        self.until = until
        self.deadline = deadline
        super().__init__(f"suspended until {until.isoformat()}" if until else "suspended until resumed")


class JobTimeout(Exception):
    """JobTimeout is why an attempt was told to stop when it ran past its timeout."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"job execution timeout after {_fmt(timeout)}")


class LeaseLostError(Exception):
    """LeaseLostError is why an attempt was told to stop when the job is no longer its own: an
    operator canceled it, or its lease expired and it went back to its queue. Whatever the
    handler does next is not recorded. progress, heartbeat and extend_lease raise it too."""

    def __init__(self, message: str = "lease lost") -> None:
        super().__init__(message)


class Shutdown(Exception):
    """Shutdown is why an attempt was told to stop when a stopping worker's grace ended."""

    def __init__(self) -> None:
        super().__init__("worker shutting down")
