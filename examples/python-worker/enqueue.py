#!/usr/bin/env python3
"""enqueue.py: enqueues a mix of resize and charge jobs in one call, with the Python SDK.

    python3 enqueue.py [--resize N] [--charge N] [--bad N] [--slow SECONDS] [--queue Q]

--bad charges have a negative amount (their worker fails them for good); --slow makes one
resize job that takes that long (to stop the server under it). HOPPER_URL and HOPPER_API_KEY
as for worker.py (a key with the enqueue scope).
"""

from __future__ import annotations

import argparse
import os

from hopper import Client, InvalidArgument, NewJob


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--resize", type=int, default=6)
    p.add_argument("--charge", type=int, default=2)
    p.add_argument("--bad", type=int, default=2)
    p.add_argument("--slow", type=float, default=0)
    p.add_argument("--queue", default="default")
    opt = p.parse_args()
    q = {"queue": opt.queue}
    jobs = [NewJob("resize", {"image": f"img-{i}.jpg", "width": 640, "height": 480, "percent": 50}, q) for i in range(opt.resize)]
    jobs += [NewJob("charge", {"order": 1000 + i, "amount": 1999}, q) for i in range(opt.charge)]
    jobs += [NewJob("charge", {"order": 2000 + i, "amount": -100}, q) for i in range(opt.bad)]
    if opt.slow:
        jobs.append(NewJob("resize", {"image": "slow.jpg", "width": 640, "height": 480, "percent": 50, "seconds": opt.slow}, q))
    with Client(os.environ.get("HOPPER_URL", "http://127.0.0.1:7070"), api_key=os.environ.get("HOPPER_API_KEY")) as c:
        try:
            results = c.enqueue_many(jobs)
        except InvalidArgument as err:  # err.field names what the server refused
            raise SystemExit(f"refused: {err.field}: {err}") from None
    for r in results:
        print(f"enqueued {r.job.kind} {r.job.id}")


if __name__ == "__main__":
    main()
