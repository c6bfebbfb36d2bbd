"""The server's limits on what a worker reports, and making text fit them.

The server refuses text that is not UTF-8, holds a NUL byte or is longer than a field takes.
A worker cannot refuse its handler's error message, so it makes such text fit instead: a
refused outcome would leave the job running until its lease expires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import NoLimitsError

__all__ = ["Limits", "limits_of", "clip_text", "error_code_problem"]


@dataclass(frozen=True)
class Limits:
    """Limits are the bounds the server puts on what a worker reports, in UTF-8 bytes (the error
    code: characters, all ASCII) and seconds. The worker reads them from the server when it
    starts (ServerService.Info, ServerInfo.input_limits), takes no job before, and makes what it
    reports fit them. It has no limits of its own."""

    error_bytes: int
    """bounds the error text (and stack) of a failed attempt."""
    reason_bytes: int
    """bounds a release's reason."""
    progress_message_bytes: int
    """bounds a progress message."""
    error_code_len: int
    """bounds a business error's code."""
    run_at_future: float
    """bounds a delay, and how far ahead a time may be, in seconds."""


def limits_of(served: Any, url: str) -> Limits:
    """limits_of is what the server at url served (an InputLimits message, or None). It raises
    NoLimitsError when the server served none, or left out (0, unset) a limit the worker needs."""
    if served is None:
        raise NoLimitsError(url)
    future = 0.0
    if served.HasField("max_run_at_future"):
        future = served.max_run_at_future.seconds + served.max_run_at_future.nanos / 1e9
    limits = Limits(
        error_bytes=served.max_error_bytes,
        reason_bytes=served.max_reason_bytes,
        progress_message_bytes=served.max_progress_message_bytes,
        error_code_len=served.max_error_code_len,
        run_at_future=future,
    )
    for name, value in (("max_error_bytes", limits.error_bytes), ("max_reason_bytes", limits.reason_bytes),
                        ("max_progress_message_bytes", limits.progress_message_bytes),
                        ("max_error_code_len", limits.error_code_len), ("max_run_at_future", limits.run_at_future)):
        if not value > 0:
            raise NoLimitsError(url, name)
    return limits


_code_chars = re.compile(r"^[A-Za-z0-9_.:-]+$")


def error_code_problem(code: str, limits: Limits) -> str | None:
    """error_code_problem says, as the server would, why code is not a business error code (1 to
    limits.error_code_len letters, digits, "_", "-", ".", ":"); None when it is one."""
    n = limits.error_code_len
    if code == "" or len(code) > n:
        return f"invalid error_code: {_quote(code)} must be 1–{n} characters"
    if not _code_chars.match(code):
        return f"invalid error_code: {_quote(code)}: only letters, digits, '_', '-', '.' and ':' are allowed"
    return None


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


_ELLIPSIS = "…"


def clip_text(s: str, limit: int) -> str:
    """clip_text makes s fit a field of limit UTF-8 bytes: lone surrogates and NUL become
    U+FFFD, and longer text is cut at a character boundary, ending with "…"."""
    b = s.encode("utf-8", "replace").replace(b"\0", "\ufffd".encode())
    # A lone surrogate encodes as "?" with "replace": make it U+FFFD, as the server would.
    if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        s = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s)
        b = s.encode("utf-8").replace(b"\0", "\ufffd".encode())
    if len(b) <= limit:
        return b.decode("utf-8")
    room = limit - len(_ELLIPSIS.encode())
    if room < 1:
        return b[: _cut(b, max(limit, 0))].decode("utf-8")
    return b[: _cut(b, room)].decode("utf-8") + _ELLIPSIS


def _cut(b: bytes, n: int) -> int:
    """_cut moves n back to the start of a UTF-8 sequence."""
    while 0 < n < len(b) and (b[n] & 0xC0) == 0x80:
        n -= 1
    return n
