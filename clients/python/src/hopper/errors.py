"""Errors the server answers with, one class per code, mirroring the server's error codes."""

from __future__ import annotations

import re
from typing import Any

import grpc

__all__ = [
    "HopperError", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "LeaseLost",
    "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
    "Unauthenticated", "NoLimitsError", "is_refusal",
]


class HopperError(Exception):
    """HopperError is an error the server answered with, or a call that could not reach it.

    code is the error code as Connect names it ("not_found", "failed_precondition", ...);
    field is the request field an INVALID_ARGUMENT answer named ("queue", "idempotency_key"),
    when it named one; request_id is the answer's x-request-id, to quote from the server's log.
    Each code has its subclass (NotFound, InvalidArgument, ...), so callers catch what they
    handle.
    """

    code = "unknown"

    def __init__(self, message: str, *, request_id: str | None = None, code: str | None = None) -> None:
        if code is not None:
            self.code = code
        super().__init__(f"[{self.code}] {message}")
        self.raw_message = message
        self.request_id = request_id
        self.field: str | None = None


class Canceled(HopperError):
    code = "canceled"


class Unknown(HopperError):
    code = "unknown"


class InvalidArgument(HopperError):
    """InvalidArgument: the server refused a field of the request; field names it when it can."""

    code = "invalid_argument"

    def __init__(self, message: str, *, request_id: str | None = None, code: str | None = None) -> None:
        super().__init__(message, request_id=request_id, code=code)
        self.field = field_of(message)


class DeadlineExceeded(HopperError):
    code = "deadline_exceeded"


class NotFound(HopperError):
    code = "not_found"


class AlreadyExists(HopperError):
    code = "already_exists"


class PermissionDenied(HopperError):
    code = "permission_denied"


class ResourceExhausted(HopperError):
    code = "resource_exhausted"


class FailedPrecondition(HopperError):
    code = "failed_precondition"


class LeaseLost(FailedPrecondition):
    """LeaseLost: a call about an attempt whose lease is gone (FAILED_PRECONDITION)."""


class Aborted(HopperError):
    code = "aborted"


class OutOfRange(HopperError):
    code = "out_of_range"


class Unimplemented(HopperError):
    code = "unimplemented"


class NoLimitsError(Unimplemented):
    """NoLimitsError is why a worker stopped taking jobs when its server serves no input limits
    (ServerService.Info without ServerInfo.input_limits, or without a limit the worker makes its
    reports fit): such a server predates the limits, or is not a Hopper server. The worker takes
    its limits only from its server, so it takes no job from this one (Worker.error).

    url is the server's; limit names the limit it left out ("max_error_bytes"), None when it
    serves none; __cause__ is the server's answer to the call when that was an error."""

    def __init__(self, url: str, limit: str | None = None, cause: BaseException | None = None) -> None:
        what = f"no input limit {limit}" if limit else "no input limits"
        msg = f"the server at {url} serves {what} (ServerService.Info): upgrade it"
        if cause is not None:
            msg += f": {cause}"
        super().__init__(msg)
        self.url = url
        self.limit = limit
        self.__cause__ = cause


class Internal(HopperError):
    code = "internal"


class Unavailable(HopperError):
    """Unavailable: the server could not be reached, or asked to be tried again."""

    code = "unavailable"


class DataLoss(HopperError):
    code = "data_loss"


class Unauthenticated(HopperError):
    code = "unauthenticated"


_classes: dict[str, type[HopperError]] = {
    c.code: c for c in (
        Canceled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists, PermissionDenied,
        ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented, Internal, Unavailable,
        DataLoss, Unauthenticated,
    )
}


def error_of(code: str, message: str, request_id: str | None = None) -> HopperError:
    """error_of is the HopperError of code ("not_found", ...) with message."""
    cls = _classes.get(code)
    if cls is None:
        return HopperError(message, request_id=request_id, code=code)
    return cls(message, request_id=request_id)


# The server says "invalid <field>: <reason>", perhaps after what it was doing ("job 2: ").
_invalid_field = re.compile(r"(?:^|: )invalid ([a-z_][a-z0-9_.\[\]]*): ")


def field_of(message: str) -> str | None:
    m = _invalid_field.search(message)
    return m.group(1) if m else None


# What grpc says when the connection broke rather than the server answered: such errors are
# Unavailable (retried by the worker), not the server's INTERNAL or UNKNOWN.
_lost = re.compile(
    r"socket closed|connection reset|rst_stream|broken pipe|goaway|connection refused|"
    r"failed to connect|stream removed|end of tcp stream|connection aborted|eof",
    re.IGNORECASE,
)


def to_hopper_error(err: BaseException) -> HopperError:
    """to_hopper_error turns what a call raised into a HopperError (a lost connection is Unavailable)."""
    if isinstance(err, HopperError):
        return err
    if isinstance(err, grpc.RpcError):
        code_fn: Any = getattr(err, "code", None)
        details_fn: Any = getattr(err, "details", None)
        status = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
        message = (details_fn() if callable(details_fn) else None) or str(err)
        request_id = _request_id(err)
        name = status.name.lower() if status is not None else "unknown"
        if name in ("internal", "unknown", "aborted", "canceled", "cancelled") and _lost.search(message):
            return Unavailable(f"connection to the server lost: {message}", request_id=request_id)
        if name == "cancelled":
            name = "canceled"
        return error_of(name, message, request_id)
    if isinstance(err, (ConnectionError, OSError)):
        return Unavailable(f"connection to the server lost: {err}")
    return Unknown(f"{type(err).__name__}: {err}")


def _request_id(err: grpc.RpcError) -> str | None:
    md_fn: Any = getattr(err, "trailing_metadata", None)
    try:
        md = md_fn() if callable(md_fn) else None
    except Exception:  # noqa: BLE001 - metadata is a nicety
        return None
    for k, v in md or ():
        if k == "x-request-id":
            return str(v)
    return None


def is_refusal(err: HopperError) -> bool:
    """is_refusal: the server refused the caller's credentials; asking again cannot help."""
    return isinstance(err, (Unauthenticated, PermissionDenied))
