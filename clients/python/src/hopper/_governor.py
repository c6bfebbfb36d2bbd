"""A worker's resource governor (the Go worker's, internal/governor; docs/flow-control.md): it
samples the process's CPU and memory use and holds back new jobs while either is at or over
its limit, so a busy process stops taking jobs instead of slowing down every job it runs.
Running jobs are never touched. Linux only (it reads /proc and the cgroup's CPU quota)."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Callable

# Use must fall under this fraction of a limit before a holding governor lets new jobs start
# again: the gap keeps a process that works near its limit from switching on every sample.
RESUME = 0.9
# The time constant of the CPU figure's moving average: one busy second moves it a third of
# the way, so a burst does not hold work back but a sustained load does.
SMOOTHING = 3.0

Reader = Callable[[], "tuple[float, int]"]
"""Reader returns the CPU use since its last call (a fraction of the CPU available to the
process) and the memory in use (bytes)."""


class ProcReader:
    """ProcReader reads this process's use: CPU time over wall time, against the CPUs it may run
    on (its affinity, or its cgroup's cpu.max quota when lower), and its resident memory."""

    def __init__(self) -> None:
        if not os.path.exists("/proc/self/statm"):
            raise ValueError("hopper: Worker: max_cpu and max_memory need Linux (/proc)")
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._cpus = _cpus()
        self._wall = time.monotonic()
        self._cpu = time.process_time()

    def __call__(self) -> tuple[float, int]:
        wall, cpu = time.monotonic(), time.process_time()
        used = (cpu - self._cpu) / max(wall - self._wall, 1e-6) / self._cpus
        self._wall, self._cpu = wall, cpu
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * self._page
        return used, rss


def _cpus() -> float:
    n = float(len(os.sched_getaffinity(0)))
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()
        if quota != "max":
            n = min(n, float(quota) / float(period))
    except (OSError, ValueError):
        pass
    return max(n, 0.01)


class Governor:
    """Governor holds back new jobs while the process's CPU (a fraction of what it may use,
    smoothed) or memory is at or over its limit (0: none), until both are under 90 % of them."""

    def __init__(self, max_cpu: float, max_memory: int, log: logging.Logger, worker: str,
                 reader: Reader | None = None, interval: float = 1.0) -> None:
        self.max_cpu = max_cpu
        self.max_memory = max_memory
        self._read = reader or ProcReader()
        self._interval = interval
        self._alpha = 1 - math.exp(-interval / SMOOTHING)
        self._log = log
        self._worker = worker
        self.cpu = 0.0
        self.memory = 0
        self.holding = False
        self._sampled = False
        self.changed = asyncio.Event()  # set at each change of holding

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self._interval)

    def sample(self) -> None:
        try:
            cpu, self.memory = self._read()
        except (OSError, ValueError) as err:
            self._log.warning("hopper: resource governor: read use: %s (worker %s)", err, self._worker)
            return
        self.cpu = cpu if not self._sampled else self.cpu + self._alpha * (cpu - self.cpu)
        self._sampled = True
        over = (self.max_cpu > 0 and self.cpu >= self.max_cpu) or (self.max_memory > 0 and self.memory >= self.max_memory)
        under = (self.max_cpu == 0 or self.cpu < RESUME * self.max_cpu) and \
            (self.max_memory == 0 or self.memory < RESUME * self.max_memory)
        if not self.holding and over:
            self._set(True, f"holding new jobs: CPU {self.cpu:.0%}, memory {self.memory} bytes")
        elif self.holding and under:
            self._set(False, f"taking new jobs again: CPU {self.cpu:.0%}, memory {self.memory} bytes")

    def _set(self, holding: bool, why: str) -> None:
        self.holding = holding
        self._log.info("hopper: resource governor %s (worker %s)", why, self._worker)
        self.changed.set()

    async def until_open(self) -> None:
        """until_open waits while the governor holds."""
        while self.holding:
            self.changed.clear()
            await self.changed.wait()
