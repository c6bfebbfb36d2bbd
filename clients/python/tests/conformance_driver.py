"""The Python SDK's driver for the SDK conformance suite (e2e/sdk in the repository; `make
sdk-conformance`): it runs the suite's cases with a Worker configured from the environment and
prints what the harness reads, one JSON object a line, on standard output. The cases and the
environment are described in docs/development.md ("The SDK conformance suite")."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

from hopper import (
    Batch,
    BatchHandlerOptions,
    BusinessError,
    NoRetry,
    RetryAfter,
    RunningJob,
    Snooze,
    SpawnJob,
    Suspend,
    Worker,
    fail_with_checkpoint,
)


def say(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def env_int(name: str, default: int) -> int:
    v = os.environ.get(name, "")
    return int(v) if v else default


async def work(job: RunningJob) -> Any:
    a = job.args
    case = a.get("case")
    ms = a.get("ms", 0) / 1000
    if case == "ok":
        return "done"
    if case == "error":
        raise Exception("boom")
    if case == "panic":
        raise TypeError("boom")
    if case in ("timeout", "wait-cancel"):
        await asyncio.sleep(3600)  # cancelled when the job is stopped
        return None
    if case == "no-retry":
        raise NoRetry("bad input")
    if case == "retry-after":
        raise RetryAfter(7200, "busy")
    if case == "business":
        raise BusinessError("card_declined", "insufficient funds")
    if case == "fail-checkpoint":
        raise fail_with_checkpoint(Exception("part 4 failed"), {"done": 3})
    if case == "snooze":
        raise Snooze(3600)
    if case == "suspend":
        raise Suspend(checkpoint={"page": 7})
    if case == "sleep":
        await asyncio.sleep(ms)
        return "done"
    if case == "progress":
        loop = asyncio.get_running_loop()
        start, i = loop.time(), 1
        while loop.time() - start < ms:
            await job.progress(int((loop.time() - start) * 100 / ms), f"step {i}")
            await asyncio.sleep(a.get("every", 100) / 1000)
            i += 1
        await job.progress(100, "all steps")
        return "done"
    if case == "value":
        return a.get("n", 0)
    if case == "sum-parents":
        parents = await job.parent_results()
        total = sum(p.result for p in parents if isinstance(p.result, (int, float)) and not isinstance(p.result, bool))
        return {"sum": total, "parents": [
            {"id": p.id, "kind": p.kind, "outcome": p.outcome, "state": p.state, "error": p.error, "result": p.result,
             "expired": p.expired, "finished": p.finished_at is not None} for p in parents]}
    if case == "spawn":
        jobs = [SpawnJob(job.kind, {"case": "value", "n": i + 1}, {"queue": job.queue, "idempotency_key": f"{job.id}-{i}"})
                for i in range(a.get("n", 0))]
        first = await job.spawn(jobs)
        again = await job.spawn(jobs)  # as a retried attempt would
        for i, r in enumerate(first):
            if r.existing or not again[i].existing or again[i].job.id != r.job.id:
                raise NoRetry(f"spawn {i}: not idempotent")
        return "spawned"
    if case == "shorten":
        await job.extend_lease(a.get("lease_ms", 1000) / 1000)
        await asyncio.sleep(ms)
        return "done"
    raise NoRetry(f"unknown case {case!r}")


async def conformance(job: RunningJob) -> Any:
    say("begin", id=job.id, attempt=job.attempt)
    try:
        return await work(job)
    finally:
        say("end", id=job.id, attempt=job.attempt)


async def conformance_batch(b: Batch[RunningJob]) -> None:
    """conformance_batch runs one call of the batch cases (e2e/sdk/cases, BatchHandler)."""
    say("batch", ids=[j.id for j in b.jobs])
    if any(j.args.get("case") == "boom" for j in b.jobs):
        raise Exception("boom")
    for i, j in enumerate(b.jobs):
        if j.args.get("case") == "result":
            b.set_result(i, "item result")
        if j.args.get("case") == "fail":
            b.fail(i, Exception("bad item"))


async def main() -> int:
    mode = os.environ.get("HOPPER_MODE") or "stream"
    if mode not in ("stream", "poll"):
        raise SystemExit(f"HOPPER_MODE {mode!r}: want stream or poll")
    lease = env_int("HOPPER_LEASE_MS", 0)
    options: dict[str, Any] = {}
    if lease > 0:
        options["lease_duration"] = lease / 1000
    if mode == "stream":
        options["prefetch"] = env_int("HOPPER_PREFETCH", 0)
    kind_concurrency = env_int("HOPPER_KIND_CONCURRENCY", 0)
    if kind_concurrency > 0:
        options["kind_concurrency"] = {"conformance": kind_concurrency}
    worker = Worker(
        os.environ.get("HOPPER_URL", ""),
        handlers={"conformance": conformance},
        batch_handlers={"conformance-batch": BatchHandlerOptions(handle=conformance_batch, max_jobs=10)},
        api_key=os.environ.get("HOPPER_API_KEY") or None,
        queue=os.environ.get("HOPPER_QUEUE") or None,
        name=os.environ.get("HOPPER_WORKER_NAME") or None,
        mode=mode,  # type: ignore[arg-type]
        concurrency=env_int("HOPPER_CONCURRENCY", 4),
        fetch_parent_results=os.environ.get("HOPPER_FETCH_PARENT_RESULTS") == "1",
        **options,
    )
    await worker.start()
    say("ready", sdk="python", extra=["panic"])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    while not stop.is_set():
        if worker.error is not None:
            say("refused", error=str(worker.error))
            await worker.stop(5)
            return 3
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except asyncio.TimeoutError:
            pass
    await worker.stop(30)
    say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
