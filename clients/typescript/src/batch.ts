// Batches: a batch kind's jobs claimed together (ActivatedJob.batchId) and run by one call of
// its BatchHandler. Each job stays its own attempt: its own lease (renewed with the worker's
// others), its own signal (a lost lease stops it alone), and its own outcome, decided and
// reported as a lone attempt's (execute.ts conclude), fenced by its own token.

import type { ActivatedJob } from "./gen/hopper/v1/hopper_pb.js";
import type { Batch, BatchHandlerOptions, RunningJob } from "./handler.js";
import { attemptTimeout, conclude, decodeArgs, type Executor, started } from "./execute.js";
import { JobTimeoutError, NoRetryError } from "./handler-errors.js";
import type { Ending } from "./outcome.js";
import { type Attempt, Running } from "./running-job.js";

/**
 * grouped splits jobs as the server sent them into units to run: each job alone, and the
 * jobs of each batch (one batchId) together, in order.
 */
export function grouped(jobs: readonly ActivatedJob[]): ActivatedJob[][] {
  const out: ActivatedJob[][] = [];
  const at = new Map<string, number>();
  for (const j of jobs) {
    const i = j.batchId ? at.get(j.batchId) : undefined;
    if (i !== undefined) {
      out[i]!.push(j);
      continue;
    }
    if (j.batchId) at.set(j.batchId, out.length);
    out.push([j]);
  }
  return out;
}

/**
 * executeBatch runs the attempts of one batch with one call of their kind's batch handler and
 * concludes each. A job whose args do not decode fails alone without retry, and a job told to
 * stop before the call (its lease lost) does not join it.
 */
export async function executeBatch(x: Executor, as: readonly Attempt[]): Promise<void> {
  const began = performance.now();
  const endings = await runBatch(x, x.batchHandler?.(as[0]!.job.kind), as);
  for (const a of as) a.handled();
  const runMs = performance.now() - began;
  await Promise.all(as.map((a, i) => conclude(x, a, endings[i]!, runMs)));
}

async function runBatch(x: Executor, h: BatchHandlerOptions | undefined, as: readonly Attempt[]): Promise<Ending[]> {
  const endings: Ending[] = as.map((a) => ({
    job: { id: a.job.id, leaseToken: a.job.leaseToken }, threw: false, mode: x.mode, kindPolicy: h?.retryPolicy, limits: a.limits,
  }));
  const members: Attempt[] = [];
  const jobs: RunningJob[] = [];
  const at: number[] = []; // the index in as of each member
  for (const [i, a] of as.entries()) {
    started(x, a);
    try {
      if (!h) throw new NoRetryError(`no batch handler for kind ${JSON.stringify(a.job.kind)}`);
      if (a.cause !== undefined) throw a.cause;
      jobs.push(new Running(a, decodeArgs(a.job.kind, a.job.args), x.api, x.leaseSet));
      members.push(a);
      at.push(i);
    } catch (err) {
      endings[i]!.threw = true;
      endings[i]!.error = err;
    }
  }
  if (h && members.length > 0) await call(h, members, jobs, at.map((i) => endings[i]!));
  for (const [i, a] of as.entries()) endings[i]!.cause = a.cause;
  return endings;
}

/**
 * call runs h for the members of a batch, within the batch's timeout (the shortest of its
 * jobs'), and sets each member's ending.
 */
async function call(h: BatchHandlerOptions, members: Attempt[], jobs: RunningJob[], endings: Ending[]): Promise<void> {
  let timeout: number | undefined;
  for (const a of members) {
    const t = attemptTimeout(a.job, h);
    if (t && (timeout === undefined || t < timeout)) timeout = t;
  }
  const all = new AbortController();
  let left = members.length;
  for (const a of members) {
    a.timeout = timeout;
    a.signal.addEventListener("abort", () => {
      if (--left === 0) all.abort(a.signal.reason);
    }, { once: true });
  }
  const timer = timeout ? setTimeout(() => { for (const a of members) a.abort(new JobTimeoutError(timeout)); }, timeout) : undefined;
  const batch = new BatchCall(jobs, all.signal);
  try {
    await h.handle(batch);
    for (const [k, e] of endings.entries()) {
      if (batch.failed.has(k)) {
        e.threw = true;
        e.error = batch.failed.get(k);
      } else e.result = batch.results.get(k);
    }
  } catch (err) {
    for (const e of endings) {
      e.threw = true;
      e.error = err; // every job fails, each as its own attempt
    }
  } finally {
    clearTimeout(timer);
  }
}

/** BatchCall is the Batch one call of a batch handler gets. */
class BatchCall<A> implements Batch<A> {
  readonly failed = new Map<number, unknown>();
  readonly results = new Map<number, unknown>();

  constructor(readonly jobs: readonly RunningJob<A>[], readonly signal: AbortSignal) {}

  fail(i: number, error: unknown): void {
    this.check(i);
    if (error === undefined) this.failed.delete(i);
    else this.failed.set(i, error);
  }

  setResult(i: number, value: unknown): void {
    this.check(i);
    this.results.set(i, value);
  }

  private check(i: number): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.jobs.length) {
      throw new RangeError(`hopper: batch job ${i} is out of range (the batch has ${this.jobs.length} jobs)`);
    }
  }
}
