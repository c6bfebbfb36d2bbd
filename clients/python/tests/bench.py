"""make py-bench [ARGS="--jobs N --concurrency N --mode stream|poll --url URL"]

Enqueues --jobs no-op jobs (in batches of 1,000, into a fresh queue bench-<random>), then works
them with the SDK's Worker and an `async def` no-op handler, and prints jobs/s: from the
worker's start until every outcome is reported. Without --url it starts `hopper serve` on a
fresh SQLite file ($HOPPER_BIN, or built from this repository); with --url it uses that server
($HOPPER_API_KEY for its key). --latency RATE instead enqueues jobs one at a time at RATE a
second against a running worker and prints the enqueue→start p50 and p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import time
from typing import Any

from hopper import AsyncClient, RunningJob, Worker

from .support import HopperServer


async def throughput(url: str, key: str | None, jobs: int, concurrency: int, mode: Any) -> dict[str, Any]:
    queue = f"bench-{secrets.token_hex(4)}"
    async with AsyncClient(url, api_key=key) as c:
        t0 = time.perf_counter()
        for i in range(0, jobs, 1000):
            await c.enqueue_many([("bench.noop", {}, {"queue": queue})] * min(1000, jobs - i))
        enqueue_secs = time.perf_counter() - t0
    handled = 0
    all_handled = asyncio.Event()

    async def noop(job: RunningJob) -> None:
        nonlocal handled
        handled += 1
        if handled == jobs:
            all_handled.set()

    w = Worker(url, api_key=key, handlers={"bench.noop": noop}, queue=queue, concurrency=concurrency, mode=mode)
    t1 = time.perf_counter()
    await w.start()
    await all_handled.wait()
    while w.running > 0:  # the last outcomes are reported
        await asyncio.sleep(0.001)
    secs = time.perf_counter() - t1
    await w.stop()
    return {"jobs": jobs, "mode": mode, "concurrency": concurrency, "enqueue_per_sec": round(jobs / enqueue_secs),
            "jobs_per_sec": round(jobs / secs), "seconds": round(secs, 2)}


async def latency(url: str, key: str | None, rate: float, jobs: int, mode: Any) -> dict[str, Any]:
    queue = f"bench-{secrets.token_hex(4)}"
    waits: list[float] = []
    sent: dict[str, float] = {}
    done = asyncio.Event()

    async def noop(job: RunningJob) -> None:
        waits.append(time.time() - job.args["t"])
        if len(waits) == jobs:
            done.set()

    w = Worker(url, api_key=key, handlers={"bench.noop": noop}, queue=queue, concurrency=50, mode=mode)
    await w.start()
    async with AsyncClient(url, api_key=key) as c:
        await asyncio.sleep(0.5)  # the stream is open, the polls waiting
        start = time.perf_counter()
        for i in range(jobs):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            r = await c.enqueue("bench.noop", {"t": time.time()}, queue=queue)
            sent[r.job.id] = time.time()
        await asyncio.wait_for(done.wait(), 60)
    await w.stop()
    q = statistics.quantiles(waits, n=100)
    return {"jobs": jobs, "mode": mode, "rate": rate, "p50_ms": round(q[49] * 1000, 2), "p99_ms": round(q[98] * 1000, 2)}


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--mode", default="stream", choices=["stream", "poll"])
    p.add_argument("--url")
    p.add_argument("--latency", type=float, default=0.0, help="enqueue one job at a time at this rate a second")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    server = None if a.url else HopperServer()
    url = a.url or (server.url if server else "")
    key = os.environ.get("HOPPER_API_KEY")
    try:
        if a.latency:
            res = await latency(url, key, a.latency, min(a.jobs, 2000), a.mode)
            text = f"{res['jobs']} jobs at {a.latency:g}/s ({a.mode}): enqueue→start p50 {res['p50_ms']} ms, p99 {res['p99_ms']} ms"
        else:
            res = await throughput(url, key, a.jobs, a.concurrency, a.mode)
            text = (f"{a.jobs} jobs ({a.mode}, concurrency {a.concurrency}): enqueued at {res['enqueue_per_sec']}/s, "
                    f"worked at {res['jobs_per_sec']} jobs/s ({res['seconds']} s)")
        print(json.dumps(res) if a.json else text)
    finally:
        if server:
            server.close()


if __name__ == "__main__":
    asyncio.run(main())
