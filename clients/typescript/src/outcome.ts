// How an attempt ended. The worker says what its handler did — returned, threw, ran out of
// time, crashed — and the server decides what that does to the job (the retry, its wait, a
// dead letter), as it does for the Go worker and in process. These are the Go worker's rules.

import type { RetryPolicy } from "./backoff.js";
import {
  BusinessError, CheckpointError, JobTimeoutError, LeaseLostError, NoRetryError, RetryAfterError, ShutdownError,
  SnoozeError, SuspendError,
} from "./handler-errors.js";
import { encodeJSON } from "./json.js";
import { clipText, errorCodeProblem, type Limits } from "./text.js";

/** JobRef names one attempt: a job and the lease token it was given with. */
export interface JobRef {
  id: string;
  leaseToken: bigint;
}

/**
 * FailKind is how an attempt failed: "error" (the handler threw), "panic" (it crashed: see
 * isCrash) or "timeout" (it ran past its execution limit).
 */
export type FailKind = "error" | "panic" | "timeout";

/** Fail is a failed attempt as the worker reports it; the server decides what follows. */
export interface Fail {
  type: "fail";
  job: JobRef;
  outcome: FailKind;
  /** error is the text recorded with the attempt (never empty). */
  error: string;
  /** stack is where the thrown error came from, recorded apart from error. */
  stack?: string;
  /** noRetry fails the job for good (a NoRetryError). */
  noRetry?: boolean;
  /** retryBackoff is the wait before the retry that a RetryAfterError asked for, in ms. */
  retryBackoff?: number;
  /** retryPolicy is the kind's own backoff, if its handler has one (the job's own policy comes first). */
  retryPolicy?: RetryPolicy;
  /** checkpoint is the JSON text a CheckpointError leaves for the next attempt. */
  checkpoint?: string;
  /** errorCode is a BusinessError's code: the server fails the job for good. */
  errorCode?: string;
}

/** Outcome is what a worker reports about an attempt. Durations are milliseconds. */
export type Outcome =
  | { type: "complete"; job: JobRef; result: string }
  | Fail
  | { type: "snooze"; job: JobRef; delay: number }
  | { type: "suspend"; job: JobRef; checkpoint: string; until?: Date; deadline?: Date }
  | { type: "release"; job: JobRef; reason: string };

/**
 * Decision is what to do with an ended attempt: report an outcome until the server gives a
 * verdict; keep the job, to release once the stream is closed (a stopping worker's); or
 * nothing (the job is no longer ours).
 */
export type Decision =
  | { action: "report"; outcome: Outcome }
  | { action: "decline" }
  | { action: "none" };

/** Ending is how an attempt's handler ended. */
export interface Ending {
  job: JobRef;
  /** threw: the handler threw error; else it returned result. */
  threw: boolean;
  result?: unknown;
  error?: unknown;
  /** cause is why the attempt's signal aborted, if it did. */
  cause?: unknown;
  mode: "stream" | "poll";
  /** kindPolicy is the handler's own backoff, if it has one. */
  kindPolicy?: RetryPolicy;
  /** limits are the server's, which the report is made to fit. */
  limits: Limits;
}

/** decide is what to do with an ended attempt. */
export function decide(e: Ending, now = new Date()): Decision {
  const job = { id: e.job.id, leaseToken: e.job.leaseToken };
  if (e.cause instanceof LeaseLostError) {
    // The job is no longer ours: nothing of what the handler did counts. In stream mode,
    // saying so frees the job's credit (the server answers FAILED_PRECONDITION).
    return e.mode === "stream" ? report({ type: "release", job, reason: "lease lost" }) : { action: "none" };
  }
  if (!e.threw) {
    // Reported whatever else aborted the signal meanwhile (a timeout, a shutdown): a success
    // is never thrown away. The report is fenced by the token.
    const result = encode(e.result, "result");
    if (typeof result === "string") return report({ type: "complete", job, result });
    return report(failure({ ...e, threw: true, error: result }));
  }
  const limits = e.limits;
  const parked = parkOutcome(job, e.error, now, limits);
  if (parked instanceof Error) return report(failure({ ...e, error: parked }));
  if (parked) return report(parked); // even on the way out: a snooze or suspension keeps its checkpoint
  if (e.cause instanceof ShutdownError) {
    if (e.mode === "stream") return { action: "decline" }; // released once the stream is closed
    return report({ type: "release", job, reason: clipText(`released on shutdown: ${describe(e.error)}`, limits.reasonBytes) });
  }
  return report(failure(e));
}

function report(outcome: Outcome): Decision {
  return { action: "report", outcome };
}

/** encode is v as JSON text, or the error that says why it cannot be. */
function encode(v: unknown, what: string): string | Error {
  try {
    return encodeJSON(v);
  } catch (err) {
    return new Error(`encode ${what}: ${describe(err)}`, { cause: err });
  }
}

/** parkOutcome is the snooze or suspension err asks for; undefined when it asks for neither. */
function parkOutcome(job: JobRef, err: unknown, now: Date, limits: Limits): Outcome | Error | undefined {
  if (err instanceof SnoozeError) return { type: "snooze", job, delay: boundDelay(err.delay, limits) };
  if (!(err instanceof SuspendError)) return undefined;
  const checkpoint = encode(err.options.checkpoint, "checkpoint");
  if (checkpoint instanceof Error) return checkpoint;
  const { until, deadline } = err.options;
  return { type: "suspend", job, checkpoint, until: until && boundUntil(until, now, limits), deadline };
}

/**
 * failure says how an attempt failed. The texts are made to fit what the server takes, so an
 * odd or huge error message never makes the report itself fail.
 */
export function failure(e: Ending): Fail {
  const limits = e.limits;
  if (e.error instanceof CheckpointError) return withCheckpoint(failure({ ...e, error: e.error.error }), e.error.checkpoint, limits);
  const out: Fail = { type: "fail", job: { id: e.job.id, leaseToken: e.job.leaseToken }, outcome: "error", error: describe(e.error) };
  // As the Go worker words it: "not retryable: <the error>".
  if (e.error instanceof NoRetryError && out.error) out.error = `not retryable: ${out.error}`;
  if (isCrash(e.error)) out.outcome = "panic";
  else if (e.cause instanceof JobTimeoutError) {
    out.outcome = "timeout";
    // As the Go worker says it: "job execution timeout after 5s: <the handler's error>".
    if (e.error !== e.cause) out.error = `${e.cause.message}: ${out.error}`;
  }
  out.error = clipText(out.error, limits.errorBytes) || `${typeName(e.error)} with an empty message`;
  const stack = stackOf(e.error);
  if (stack) out.stack = clipText(stack, limits.errorBytes);
  if (e.error instanceof NoRetryError) out.noRetry = true;
  if (e.error instanceof RetryAfterError) out.retryBackoff = boundDelay(e.error.delay, limits);
  if (e.kindPolicy) out.retryPolicy = e.kindPolicy;
  if (e.error instanceof BusinessError) {
    // As the Go worker does: a code the server would refuse makes a plain error that says why.
    const problem = errorCodeProblem(e.error.code, limits);
    if (problem) out.error = clipText(`${out.error} (not a business error: ${problem})`, limits.errorBytes);
    else out.errorCode = e.error.code;
  }
  return out;
}

/** withCheckpoint is f carrying checkpoint as JSON; one that does not encode is dropped, and said so. */
function withCheckpoint(f: Fail, checkpoint: unknown, limits: Limits): Fail {
  if (checkpoint === undefined) return f;
  const text = encode(checkpoint, "checkpoint");
  if (text instanceof Error) return { ...f, error: clipText(`${f.error} (checkpoint dropped: ${text.message})`, limits.errorBytes) };
  return { ...f, checkpoint: text };
}

/**
 * isCrash says whether err is what JavaScript throws for a bug — a TypeError (reading a field
 * of undefined), a ReferenceError, a RangeError (a stack overflow), a SyntaxError, an
 * EvalError or a URIError — rather than an error the handler chose to throw: the attempt's
 * outcome is then "panic", as for a Go handler that panics.
 */
export function isCrash(err: unknown): boolean {
  return crashes.some((type) => err instanceof type);
}

const crashes = [TypeError, ReferenceError, RangeError, SyntaxError, EvalError, URIError];

/**
 * describe is an error's text as an attempt records it: its message, after its name unless
 * it is a plain Error or one of the SDK's ("TypeError: x is not a function", "rate limited");
 * anything thrown that is not an Error, as a string.
 */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.name === "Error" || sdkErrors.some((type) => err instanceof type)) return err.message;
  return `${err.name}: ${err.message}`;
}

const sdkErrors = [
  NoRetryError, RetryAfterError, JobTimeoutError, LeaseLostError, ShutdownError, SnoozeError, SuspendError, BusinessError,
];

/** stackOf is err's stack (where it was thrown); none for the SDK's own errors, which are outcomes, not faults. */
function stackOf(err: unknown): string | undefined {
  if (!(err instanceof Error) || typeof err.stack !== "string" || sdkErrors.some((type) => err instanceof type)) return undefined;
  return err.stack;
}

function typeName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

// The server takes delays and times up to its limits.runAtFutureMs ahead (a job that far off
// is as good as never) and none in the past: outcomes are reported within them, so a
// snooze of a century or a suspension until 1970 ends its attempt rather than being refused.
const clockSlack = 3600_000; // room for the server's clock to be ahead of this one

/** boundDelay is ms within 0 and the server's furthest delay. */
export function boundDelay(ms: number, limits: Limits): number {
  return Math.min(Math.max(ms, 0), limits.runAtFutureMs) || 0;
}

/** boundUntil is t within now and the server's furthest time (less an hour) from now. */
export function boundUntil(t: Date, now: Date, limits: Limits): Date {
  const ms = Math.min(Math.max(t.getTime(), now.getTime()), now.getTime() + limits.runAtFutureMs - clockSlack);
  return new Date(Number.isNaN(ms) ? now.getTime() : ms);
}
