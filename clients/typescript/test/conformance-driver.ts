// The TypeScript SDK's driver for the SDK conformance suite (e2e/sdk in the repository; `make
// sdk-conformance`): it runs the suite's cases with a Worker configured from the environment
// and prints what the harness reads, one JSON object a line, on standard output. The cases
// and the environment are described in docs/development.md ("The SDK conformance suite").

import {
  BusinessError, failWithCheckpoint, NoRetryError, RetryAfterError, SnoozeError, SuspendError, Worker,
} from "../src/index.js";
import type { Batch, RunningJob } from "../src/index.js";

interface Args {
  case: string;
  ms?: number;
  every?: number;
  lease_ms?: number;
  n?: number;
}

function say(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
}

function envInt(name: string, def: number): number {
  const v = process.env[name];
  if (!v) return def;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new Error(`${name}: ${JSON.stringify(v)} is not a whole number`);
  return n;
}

/** sleep waits ms, or throws the signal's reason when it aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(timer); reject(signal.reason); };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

async function work(job: RunningJob<Args>): Promise<unknown> {
  const a = job.args;
  switch (a.case) {
    case "ok":
      return "done";
    case "error":
      throw new Error("boom");
    case "timeout":
    case "wait-cancel":
      await new Promise((_, reject) => {
        if (job.signal.aborted) reject(job.signal.reason);
        job.signal.addEventListener("abort", () => reject(job.signal.reason), { once: true });
      });
      return undefined;
    case "no-retry":
      throw new NoRetryError("bad input");
    case "retry-after":
      throw new RetryAfterError(2 * 3600_000, "busy");
    case "business":
      throw new BusinessError("card_declined", "insufficient funds");
    case "fail-checkpoint":
      throw failWithCheckpoint(new Error("part 4 failed"), { done: 3 });
    case "snooze":
      throw new SnoozeError(3600_000);
    case "suspend":
      throw new SuspendError({ checkpoint: { page: 7 } });
    case "sleep":
      await sleep(a.ms ?? 0, job.signal);
      return "done";
    case "progress": {
      const ms = a.ms ?? 0;
      const start = Date.now();
      for (let i = 1; Date.now() - start < ms; i++) {
        await job.progress(Math.floor(((Date.now() - start) * 100) / ms), `step ${i}`);
        await sleep(a.every ?? 100, job.signal);
      }
      await job.progress(100, "all steps");
      return "done";
    }
    case "value":
      return a.n ?? 0;
    case "sum-parents": {
      const parents = await job.parentResults();
      let sum = 0;
      for (const p of parents) if (typeof p.result === "number") sum += p.result;
      return {
        sum, parents: parents.map((p) => ({
          id: p.id, kind: p.kind, outcome: p.outcome, state: p.state, error: p.error, result: p.result ?? null,
          expired: p.expired, finished: p.finishedAt !== undefined,
        })),
      };
    }
    case "spawn": {
      const jobs = Array.from({ length: a.n ?? 0 }, (_, i) => ({
        kind: job.kind, args: { case: "value", n: i + 1 }, queue: job.queue, idempotencyKey: `${job.id}-${i}`,
      }));
      const first = await job.spawn(jobs);
      const again = await job.spawn(jobs); // as a retried attempt would
      first.forEach((r, i) => {
        if (r.existing || !again[i]!.existing || again[i]!.job.id !== r.job.id) throw new NoRetryError(`spawn ${i}: not idempotent`);
      });
      return "spawned";
    }
    case "shorten":
      await job.extendLease(a.lease_ms ?? 1000);
      await sleep(a.ms ?? 0, job.signal);
      return "done";
  }
  throw new NoRetryError(`unknown case ${JSON.stringify(a.case)}`);
}

/** workBatch runs one call of the batch cases (e2e/sdk/cases, BatchHandler). */
function workBatch(b: Batch<{ case: string }>): void {
  say("batch", { ids: b.jobs.map((j) => j.id) });
  if (b.jobs.some((j) => j.args.case === "boom")) throw new Error("boom");
  for (const [i, j] of b.jobs.entries()) {
    if (j.args.case === "result") b.setResult(i, "item result");
    if (j.args.case === "fail") b.fail(i, new Error("bad item"));
  }
}

const mode = process.env.HOPPER_MODE || "stream";
if (mode !== "stream" && mode !== "poll") throw new Error(`HOPPER_MODE ${JSON.stringify(mode)}: want stream or poll`);
const lease = envInt("HOPPER_LEASE_MS", 0);
const kindBound = envInt("HOPPER_KIND_CONCURRENCY", 0);
const worker = new Worker({
  url: process.env.HOPPER_URL ?? "",
  apiKey: process.env.HOPPER_API_KEY || undefined,
  queue: process.env.HOPPER_QUEUE || undefined,
  name: process.env.HOPPER_WORKER_NAME || undefined,
  mode,
  concurrency: envInt("HOPPER_CONCURRENCY", 4),
  prefetch: mode === "stream" ? envInt("HOPPER_PREFETCH", 0) : undefined,
  leaseDuration: lease > 0 ? lease : undefined,
  kindConcurrency: kindBound > 0 ? { conformance: kindBound } : undefined,
  fetchParentResults: process.env.HOPPER_FETCH_PARENT_RESULTS === "1",
  handlers: {
    conformance: async (job: RunningJob<Args>) => {
      say("begin", { id: job.id, attempt: job.attempt });
      try {
        return await work(job);
      } finally {
        say("end", { id: job.id, attempt: job.attempt });
      }
    },
  },
  batchHandlers: { "conformance-batch": { handle: workBatch, maxJobs: 10 } },
});
worker.start();
say("ready", { sdk: "typescript", extra: [] });

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await worker.stop(AbortSignal.timeout(30_000));
  say("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
const watch = setInterval(() => {
  if (!worker.error) return;
  clearInterval(watch);
  say("refused", { error: worker.error.message });
  void worker.stop(AbortSignal.timeout(5_000)).finally(() => process.exit(3));
}, 100);
