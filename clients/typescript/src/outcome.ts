// How an attempt ends: what its handler did, and why its signal aborted, decide what the
// worker tells the server. It mirrors the Go remote worker's rules.

import { backoffDelay, defaultJobPolicy, mergePolicy } from "./backoff.js";
import type { RetryPolicy } from "./backoff.js";
import {
  JobTimeoutError, LeaseLostError, NoRetryError, RetryAfterError, ShutdownError, SnoozeError, StreamClosedError,
  SuspendError,
} from "./handler-errors.js";
import { encodeJSON } from "./json.js";
import { clipText, MAX_ERROR_BYTES, MAX_REASON_BYTES } from "./text.js";

/** JobRef names one attempt: a job and the lease token it was given with. */
export interface JobRef {
  id: string;
  leaseToken: bigint;
}

/** Outcome is what a worker reports about an attempt. Durations are milliseconds. */
export type Outcome =
  | { type: "complete"; job: JobRef; result: string }
  | { type: "fail"; job: JobRef; error: string; retries?: number; retryBackoff?: number }
  | { type: "snooze"; job: JobRef; delay: number }
  | { type: "suspend"; job: JobRef; checkpoint: string; until?: Date; deadline?: Date }
  | { type: "release"; job: JobRef; reason: string };

/**
 * Decision is what to do with an ended attempt: report an outcome until the server gives a
 * verdict; release it with one quick try (its stream closed); keep it, to release once the
 * stream is closed (a stopping worker's); or nothing (the job is no longer ours).
 */
export type Decision =
  | { action: "report"; outcome: Outcome }
  | { action: "releaseOnce"; outcome: Outcome }
  | { action: "decline" }
  | { action: "none" };

/** Ending is how an attempt's handler ended. */
export interface Ending {
  job: JobRef & { attempt: number; retryPolicy?: RetryPolicy };
  /** threw: the handler threw error; else it returned result. */
  threw: boolean;
  result?: unknown;
  error?: unknown;
  /** cause is why the attempt's signal aborted, if it did. */
  cause?: unknown;
  mode: "stream" | "poll";
  /** kindPolicy is the handler's own backoff, if it has one. */
  kindPolicy?: RetryPolicy;
}

/** decide is what to do with an ended attempt. */
export function decide(e: Ending, now = new Date()): Decision {
  const job = { id: e.job.id, leaseToken: e.job.leaseToken };
  if (!e.threw) {
    // Reported whatever aborted the signal meanwhile: a success is never thrown away. The
    // report is fenced by the token, so the server refuses it if the job is no longer ours.
    const result = encode(e.result, "result");
    if (typeof result === "string") return report({ type: "complete", job, result });
    return report(failOutcome({ ...e, threw: true, error: result }));
  }
  const parked = parkOutcome(job, e.error, now);
  if (parked instanceof Error) return report(failOutcome({ ...e, error: parked }));
  if (parked) return report(parked);
  if (e.cause instanceof StreamClosedError) {
    // Said at once, the server takes the job back without counting this worker as lost.
    return { action: "releaseOnce", outcome: { type: "release", job, reason: "job stream closed" } };
  }
  if (e.cause instanceof LeaseLostError) {
    // Saying so frees the job's credit on the stream (the server answers FAILED_PRECONDITION).
    return e.mode === "stream" ? report({ type: "release", job, reason: "lease lost" }) : { action: "none" };
  }
  if (e.cause instanceof ShutdownError) {
    if (e.mode === "stream") return { action: "decline" };
    return report({ type: "release", job, reason: clipText(`released on shutdown: ${describe(e.error)}`, MAX_REASON_BYTES) });
  }
  return report(failOutcome(e));
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
function parkOutcome(job: JobRef, err: unknown, now: Date): Outcome | Error | undefined {
  if (err instanceof SnoozeError) return { type: "snooze", job, delay: boundDelay(err.delay) };
  if (!(err instanceof SuspendError)) return undefined;
  const checkpoint = encode(err.options.checkpoint, "checkpoint");
  if (checkpoint instanceof Error) return checkpoint;
  const { until, deadline } = err.options;
  return { type: "suspend", job, checkpoint, until: until && boundUntil(until, now), deadline };
}

/**
 * failOutcome is the failure of an attempt, as the in-process engine decides it: NoRetryError
 * fails the job, RetryAfterError and a handler's own policy set the wait. The error text is
 * made to fit what the server takes.
 */
export function failOutcome(e: Ending): Outcome {
  let error = describe(e.error);
  if (e.cause instanceof JobTimeoutError && !(e.error instanceof JobTimeoutError)) error = `${e.cause.message}: ${error}`;
  error = clipText(error, MAX_ERROR_BYTES) || `${typeName(e.error)} with an empty message`;
  const outcome: Outcome = { type: "fail", job: { id: e.job.id, leaseToken: e.job.leaseToken }, error };
  if (e.error instanceof NoRetryError) outcome.retries = 0;
  else if (e.error instanceof RetryAfterError) outcome.retryBackoff = boundDelay(e.error.delay);
  else if (e.kindPolicy) {
    const policy = mergePolicy(e.job.retryPolicy, e.kindPolicy, defaultJobPolicy);
    outcome.retryBackoff = boundDelay(backoffDelay(policy, e.job.attempt));
  }
  return outcome;
}

/**
 * describe is an error as an attempt records it: an unexpected error with its stack (it is
 * the handler's crash); one of the outcome errors, or the signal's reason passed on, by its
 * message; anything else as a string.
 */
export function describe(err: unknown): string {
  if (expected.some((type) => err instanceof type)) return (err as Error).message;
  if (err instanceof Error) return err.stack || `${err.name}: ${err.message}`;
  return String(err);
}

const expected = [NoRetryError, RetryAfterError, JobTimeoutError, LeaseLostError, ShutdownError];

function typeName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

// The server takes delays and times up to 5 years ahead (a job that far off is as good as
// never) and none in the past: outcomes are reported within them, so a snooze of a century or
// a suspension until 1970 ends its attempt rather than being refused.
const maxFuture = 5 * 365 * 24 * 3600_000;
const clockSlack = 3600_000; // room for the server's clock to be ahead of this one

/** boundDelay is ms within 0 and 5 years. */
export function boundDelay(ms: number): number {
  return Math.min(Math.max(ms, 0), maxFuture) || 0;
}

/** boundUntil is t within now and 5 years (less an hour) from now. */
export function boundUntil(t: Date, now: Date): Date {
  const ms = Math.min(Math.max(t.getTime(), now.getTime()), now.getTime() + maxFuture - clockSlack);
  return new Date(Number.isNaN(ms) ? now.getTime() : ms);
}
