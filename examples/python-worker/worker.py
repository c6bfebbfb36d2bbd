#!/usr/bin/env python3
"""worker.py: a Hopper worker for two kinds of jobs, with the Python SDK.

    python3 worker.py [--mode stream|poll] [--concurrency N] [--queue Q]

    resize  {image, width, height, percent, seconds?}
                                  -> completes with {width, height} scaled by percent, after
                                     seconds (default 0.2); an async handler
    charge  {order, amount}       -> fails for good when amount is negative, else completes
                                     with {order, charged}; a plain function, run on the
                                     worker's own threads

SIGINT or SIGTERM stops gracefully: running jobs get 10 s, the others go back to the queue.
HOPPER_URL (default http://127.0.0.1:7070) names the server; HOPPER_API_KEY, when set, is sent
with every call (a key with the work scope).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from typing import Any

from hopper import NoRetry, RunningJob, SyncRunningJob, Worker


async def resize(job: RunningJob) -> dict[str, int]:
    a = job.args
    await job.progress(50, f"resizing {a['image']}")
    await asyncio.sleep(a.get("seconds", 0.2))  # stands for the work
    result = {"width": a["width"] * a["percent"] // 100, "height": a["height"] * a["percent"] // 100}
    print(f"completed resize {job.id} {result}", flush=True)
    return result


def charge(job: SyncRunningJob) -> dict[str, Any]:
    order, amount = job.args["order"], job.args["amount"]
    if amount < 0:
        print(f"failed charge {job.id} (attempt {job.attempt}/{job.max_attempts}): amount {amount} is negative", flush=True)
        raise NoRetry(f"charge: amount {amount} is negative")  # retrying cannot help
    print(f"completed charge {job.id} {{'order': {order}, 'charged': {amount}}}", flush=True)
    return {"order": order, "charged": amount}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="stream", choices=["stream", "poll"])
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--queue", default="default")
    opt = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the SDK logs outages and recoveries
    worker = Worker(
        os.environ.get("HOPPER_URL", "http://127.0.0.1:7070"), api_key=os.environ.get("HOPPER_API_KEY"),
        handlers={"resize": resize, "charge": charge}, mode=opt.mode, concurrency=opt.concurrency, queue=opt.queue,
    )
    print(f"worker {worker.name}: {opt.mode} mode, queue {opt.queue}, kinds resize, charge", flush=True)
    asyncio.run(worker.run(drain=10))
    if worker.error:
        raise SystemExit(f"stopped: {worker.error}")


if __name__ == "__main__":
    main()
