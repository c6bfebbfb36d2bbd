// What a handler throws to decide its attempt's outcome, and why its signal aborts.

import { formatMs } from "./time.js";

/** NoRetryError, thrown by a handler, fails the job at once, whatever attempts it has left. */
export class NoRetryError extends Error {
  override readonly name = "NoRetryError";
}

/**
 * RetryAfterError, thrown by a handler, retries the job after delay milliseconds instead of
 * its backoff. The attempt still counts: with none left, the job fails.
 */
export class RetryAfterError extends Error {
  override readonly name = "RetryAfterError";
  /** message, when given, follows "retry after <delay>: ", as a Go worker words it. */
  constructor(
    readonly delay: number,
    message?: string,
    options?: ErrorOptions,
  ) {
    super(message === undefined ? `retry after ${formatMs(delay)}` : `retry after ${formatMs(delay)}: ${message}`, options);
  }
}

/**
 * BusinessError, thrown by a handler, fails the job for good with an error code that is part
 * of its contract (Zeebe's "throw error"): no retry, whatever attempts are left, unless the
 * job's, the kind's (HandlerOptions.retryPolicy) or the server's retry policy sets
 * retryBusinessErrors: then it is retried like any error while attempts are left. The code is
 * kept with the attempt and as the job's lastErrorCode; lists and dead letters filter by it.
 * It must be 1–128 letters, digits, "_", "-", "." or ":"; with another code the attempt fails
 * as a plain error (retried as one) whose text says why, as a Go handler's would.
 *
 *     throw new BusinessError("card_declined", "insufficient funds");
 */
export class BusinessError extends Error {
  override readonly name = "BusinessError";
  constructor(
    readonly code: string,
    detail?: string,
    options?: ErrorOptions,
  ) {
    super(detail ? `${code}: ${detail}` : code, options);
  }
}

/**
 * CheckpointError fails the attempt as error alone would (retried while attempts are left;
 * a NoRetryError, RetryAfterError or BusinessError inside still counts) and hands checkpoint
 * (any JSON value) to the next attempt as job.checkpoint, as a suspension does. A job that
 * fails for good keeps it, for whoever resolves it. Throw it with failWithCheckpoint.
 */
export class CheckpointError extends Error {
  override readonly name = "CheckpointError";
  constructor(
    readonly error: unknown,
    readonly checkpoint: unknown,
  ) {
    super(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/**
 * failWithCheckpoint is the error to throw to fail an attempt with error and leave
 * checkpoint for the next one:
 *
 *     throw failWithCheckpoint(new Error("part 4 failed"), { done: 3 });
 */
export function failWithCheckpoint(error: unknown, checkpoint: unknown): CheckpointError {
  return new CheckpointError(error, checkpoint);
}

/**
 * SnoozeError, thrown by a handler, ends the attempt with "not now": the job runs again after
 * delay milliseconds, without consuming an attempt.
 */
export class SnoozeError extends Error {
  override readonly name = "SnoozeError";
  constructor(readonly delay: number) {
    super(`snoozed for ${formatMs(delay)}`);
  }
}

/** SuspendOptions says what a suspended job keeps and how long it waits. */
export interface SuspendOptions {
  /** checkpoint is handed to the next attempt as job.checkpoint (any JSON value); unset keeps the previous one. */
  checkpoint?: unknown;
  /** until, when set, parks the job as scheduled until then; it then runs again. */
  until?: Date;
  /** deadline, for a job parked until Client.resume (no until): still suspended then, it fails. */
  deadline?: Date;
}

/**
 * SuspendError, thrown by a handler, parks the job without consuming an attempt: until
 * options.until, or until Client.resume. The next attempt, on any worker, gets the checkpoint.
 */
export class SuspendError extends Error {
  override readonly name = "SuspendError";
  constructor(readonly options: SuspendOptions = {}) {
    super(options.until ? `suspended until ${options.until.toISOString()}` : "suspended until resumed");
  }
}

/** JobTimeoutError is a handler's signal.reason when its attempt ran past its timeout. */
export class JobTimeoutError extends Error {
  override readonly name = "JobTimeoutError";
  constructor(readonly timeout: number) {
    super(`job execution timeout after ${formatMs(timeout)}`);
  }
}

/**
 * LeaseLostError is a handler's signal.reason when the job is no longer its own: an operator
 * canceled it, or its lease expired (the worker could not renew it in time) and it went back
 * to its queue. Whatever the handler does next is not recorded.
 */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(message = "lease lost") {
    super(message);
  }
}

/** ShutdownError is a handler's signal.reason when Worker.stop's grace ended. */
export class ShutdownError extends Error {
  override readonly name = "ShutdownError";
  constructor() {
    super("worker shutting down");
  }
}
