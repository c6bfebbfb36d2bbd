"""Backoff between tries, and logging an outage once rather than once per try."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    """Policy: min(cap, base·multiplierⁿ⁻¹) ± jitter·delay, in seconds."""

    base: float
    multiplier: float
    cap: float
    jitter: float


WORK = Policy(0.1, 2, 5.0, 0.2)
"""The backoff of a worker's stream and polls, as the Go worker's: 100 ms doubling to 5 s, ±20 %."""
LOOP = Policy(0.1, 2, 30.0, 0.2)
"""The backoff of other loops that call the server (lease renewals): 100 ms doubling to 30 s."""
REPORT = Policy(0.05, 2, 2.0, 0.2)
"""The spacing of an outcome's tries: 50 ms doubling to 2 s, ±20 %."""


def delay(p: Policy, n: int) -> float:
    """delay is the wait after failed try n (n ≥ 1) under p."""
    d = p.base * p.multiplier ** (max(n, 1) - 1)
    if not d < p.cap:
        d = p.cap
    if p.jitter > 0:
        d += d * p.jitter * (2 * random.random() - 1)
    return max(d, 0.0)


class Tracker:
    """Tracker spaces the tries of a loop whose calls fail and logs when an outage starts, once a
    minute while it lasts, and when it ends."""

    def __init__(self, name: str, policy: Policy, log: logging.Logger, worker: str) -> None:
        self._name = name
        self._policy = policy
        self._log = log
        self._worker = worker
        self._failures = 0
        self._since = 0.0
        self._reminded = 0.0

    def fail(self, err: object) -> float:
        now = time.monotonic()
        self._failures += 1
        if self._failures == 1:
            self._since = self._reminded = now
            self._log.warning("%s: the server cannot be reached; retrying: %s (worker %s)", self._name, err, self._worker)
        elif now - self._reminded >= 60:
            self._reminded = now
            self._log.warning("%s: still failing after %.0fs: %s (worker %s)", self._name, now - self._since, err, self._worker)
        return delay(self._policy, self._failures)

    def succeed(self) -> None:
        if self._failures > 0:
            self._log.info("%s: recovered after %.1fs (worker %s)", self._name, time.monotonic() - self._since, self._worker)
        self._failures = 0
