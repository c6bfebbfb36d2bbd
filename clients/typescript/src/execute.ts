import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { backoffDelay } from "./backoff.js";
import { type HopperError, isRefusal, toHopperError } from "./errors.js";
import type { ActivatedJob, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import type { BatchHandlerOptions, HandlerOptions } from "./handler.js";
import { JobTimeoutError, NoRetryError } from "./handler-errors.js";
import { decodeJSON } from "./json.js";
import type { Logger } from "./logger.js";
import { outcomeOf } from "./observe.js";
import type { Observer, WorkerEvent } from "./observe.js";
import { decide } from "./outcome.js";
import type { Ending, Outcome } from "./outcome.js";
import { reportUntilVerdict } from "./reporter.js";
import type { Reporter } from "./reporter.js";
import type { Attempt } from "./running-job.js";
import { Running, sendPending } from "./running-job.js";
import { sleep } from "./sleep.js";
import { clipText, type Limits } from "./text.js";
import { fromDuration } from "./time.js";

/** How long an outcome's report is retried. */
const reportTimeout = 30_000;

/** Executor is what running an attempt needs from its worker. */
export interface Executor {
  api: RpcClient<typeof WorkerService>;
  reporter: Reporter;
  mode: "stream" | "poll";
  log: Logger;
  handler(kind: string): HandlerOptions | undefined;
  /** batchHandler is the batch handler of kind, if it has one (none: batches have no handler). */
  batchHandler?(kind: string): BatchHandlerOptions | undefined;
  /** decline keeps a job to release once the stream is closed. */
  decline(a: Attempt): void;
  /** leaseSet tells the lease keeper that a handler set its own lease. */
  leaseSet(): void;
  /** refused tells the worker that the server refused its key: it takes no more jobs. */
  refused(err: HopperError): void;
  /** observer hears each attempt start and end (WorkerOptions.observer). */
  observer?: Observer;
}

/** execute runs attempt a with its handler and reports how it ended. */
export async function execute(x: Executor, a: Attempt): Promise<void> {
  started(x, a);
  const began = performance.now();
  const ending = await run(x, a);
  a.handled(); // a poll slot is free while the outcome is on its way
  await conclude(x, a, ending, performance.now() - began);
}

/** started tells the observer that a's attempt starts. */
export function started(x: Executor, a: Attempt): void {
  const j = a.job;
  observe(x, { type: "started", jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt });
}

/**
 * conclude decides what a's ending does (decide) and acts on it: reports the outcome, keeps
 * the job to release, or nothing; the observer hears the attempt end.
 */
export async function conclude(x: Executor, a: Attempt, ending: Ending, runMs: number): Promise<void> {
  const j = a.job;
  const ev: WorkerEvent = { type: "ended", jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt };
  const decision = decide({ ...ending, limits: a.limits });
  observe(x, { ...ev, outcome: outcomeOf(decision), runMs });
  switch (decision.action) {
    case "none":
      return;
    case "decline":
      x.decline(a);
      return;
    case "report":
      await flushPending(x, a, Date.now() + reportTimeout);
      await reportOrFail(x, decision.outcome, a.limits);
  }
}

/** observe tells the worker's observer of ev; what it throws is logged. */
function observe(x: Executor, ev: WorkerEvent): void {
  if (!x.observer) return;
  try {
    x.observer(ev);
  } catch (err) {
    x.log.error("job observer threw", { event: ev.type, jobId: ev.jobId, err: String(err) });
  }
}

/** run calls a's handler within the attempt's execution limit and says how it ended. */
async function run(x: Executor, a: Attempt): Promise<Ending> {
  const j = a.job;
  const h = x.handler(j.kind);
  const ending: Ending = { job: { id: j.id, leaseToken: j.leaseToken }, threw: false, mode: x.mode, kindPolicy: h?.retryPolicy, limits: a.limits };
  const timeout = (a.timeout = attemptTimeout(j, h));
  const timer = timeout ? setTimeout(() => a.abort(new JobTimeoutError(timeout)), timeout) : undefined;
  try {
    if (!h) throw new NoRetryError(`no handler for kind ${JSON.stringify(j.kind)}`);
    ending.result = await h.handle(new Running(a, decodeArgs(j.kind, j.args), x.api, x.leaseSet));
  } catch (err) {
    ending.threw = true;
    ending.error = err;
  } finally {
    clearTimeout(timer);
  }
  ending.cause = a.cause;
  return ending;
}

/**
 * attemptTimeout is the execution limit of an attempt of job run by h, in ms: the job's own
 * timeout, else its kind's, else the server's default (undefined: none).
 */
export function attemptTimeout(job: ActivatedJob, h: HandlerOptions | BatchHandlerOptions | undefined): number | undefined {
  return fromDuration(job.timeout) || h?.timeout || fromDuration(job.defaultTimeout) || undefined;
}

/** decodeArgs is a job's args decoded; what does not decode is a NoRetryError. */
export function decodeArgs(kind: string, args: string): unknown {
  try {
    return decodeJSON(args) ?? {};
  } catch (err) {
    throw new NoRetryError(`decode args of kind ${JSON.stringify(kind)}: ${(err as Error).message}`);
  }
}

/**
 * reportOrFail reports outcome until the server gives a verdict. When the server refuses the
 * outcome as the handler gave it (a suspension deadline already past, say), the attempt fails
 * with the server's reason instead, rather than run on until its lease expires, and then again
 * on every retry.
 */
async function reportOrFail(x: Executor, outcome: Outcome, limits: Limits): Promise<void> {
  const deadline = Date.now() + reportTimeout;
  try {
    try {
      await reportUntilVerdict(x.reporter, outcome, deadline);
    } catch (e) {
      const err = toHopperError(e);
      if (err.code !== Code.InvalidArgument) throw err;
      const error = clipText(`the server refused the attempt's outcome: ${err.message}`, limits.errorBytes);
      await reportUntilVerdict(x.reporter, { type: "fail", job: outcome.job, outcome: "error", error }, deadline);
    }
  } catch (e) {
    const err = toHopperError(e);
    if (isRefusal(err)) x.refused(err);
    else x.log.error("report job outcome", { jobId: outcome.job.id, outcome: outcome.type, err: err.message });
  }
}

/** The spacing of the tries of kept progress: 50 ms doubling to 2 s, ±20 %, as an outcome's. */
const pendingRetry = { base: 50, multiplier: 2, cap: 2000, jitter: 0.2 };

/**
 * flushPending sends the progress or heartbeat a's handler made while the server could not be
 * reached, retrying until the server answers or deadline (ms since the epoch): after the
 * outcome it would be refused, the lease gone.
 */
async function flushPending(x: Executor, a: Attempt, deadline: number): Promise<void> {
  for (let n = 1; ; n++) {
    try {
      await sendPending(x.api, a);
      return;
    } catch (e) {
      const err = toHopperError(e);
      if (isRefusal(err)) return x.refused(err);
      const wait = backoffDelay(pendingRetry, n);
      if (err.code !== Code.Unavailable || Date.now() + wait >= deadline) {
        if (err.code !== Code.FailedPrecondition && err.code !== Code.NotFound) {
          x.log.warn("report kept progress", { jobId: a.job.id, err: err.message });
        }
        return;
      }
      await sleep(wait);
    }
  }
}
