import type { RetryPolicy } from "./backoff.js";
import type { EnqueueResult, NewJob } from "./client.js";

/** ParentOutcome is how a parent ended for its children ("" for one that has not ended). */
export type ParentOutcome = "completed" | "failed" | "canceled" | "skipped" | "";

/**
 * ParentResult is one parent of a running job (EnqueueOptions.after): how it ended and what
 * it left (docs/workflows.md, "Results passed along").
 */
export interface ParentResult<R = unknown> {
  id: string;
  /** kind is the parent's kind; "" when expired. */
  kind: string;
  /** step is the parent's step name when it is a step of a workflow; "" outside one, and when expired. */
  step: string;
  /** outcome is how the parent ended: "skipped" counts as succeeded (its own skip policy canceled it). */
  outcome: ParentOutcome;
  /** state is the parent's state now (its outcome's final state, unless it was retried in place since); "" when expired. */
  state: string;
  /** result is the JSON value the parent completed with; undefined when it stored none, did not complete, or expired. */
  result?: R;
  /** error is the parent's last error, if any. */
  error: string;
  finishedAt?: Date;
  /** expired: the parent's retention ran out before the read: only id and outcome are known. */
  expired: boolean;
}

/**
 * RunningJob is the job a handler works on, with the calls it can make about its attempt.
 * Its payloads are decoded JSON values; durations are milliseconds.
 */
export interface RunningJob<A = unknown> {
  readonly id: string;
  readonly kind: string;
  readonly queue: string;
  readonly args: A;
  readonly headers: Readonly<Record<string, string>>;
  /** attempt is 1 for the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** leaseToken fences every call about this attempt. */
  readonly leaseToken: bigint;
  readonly createdAt?: Date;
  /**
   * timeout is the attempt's execution limit, if it has one: the job's own, else its kind's
   * (HandlerOptions.timeout), else the server's default for jobs without one.
   */
  readonly timeout?: number;
  /** checkpoint is what a suspended, snoozed or failed earlier attempt left, if any. */
  readonly checkpoint?: unknown;
  /** resumeData is what Client.resume handed to the job, if it was resumed. */
  readonly resumeData?: unknown;
  /**
   * signal aborts when the handler should stop: its reason is a JobTimeoutError (the
   * attempt's timeout passed), a LeaseLostError (the job is no longer this worker's:
   * canceled, or its lease lapsed) or a ShutdownError (a stopping worker's grace ended). A
   * job stream that drops aborts nothing. Pass it to what the handler awaits (fetch, timers…).
   */
  readonly signal: AbortSignal;
  /**
   * progress stores progress (percent, clamped to 0–100, and a message) and counts as a
   * heartbeat. It throws a LeaseLostError, and aborts signal, when the job is no longer this
   * attempt's. While the server cannot be reached (an outage, a restart) it does not throw:
   * the latest progress is kept and sent with the next call or, at the latest, before the
   * attempt's outcome.
   */
  progress(percent: number, message?: string): Promise<void>;
  /**
   * heartbeat records a sign of life (separate from the lease); it throws as progress does,
   * and is kept as progress is while the server cannot be reached.
   */
  heartbeat(): Promise<void>;
  /**
   * extendLease sets the lease to expire ms from now (it may shorten it); later automatic
   * renewals keep ms, and come every third of it. It throws as progress does, and a
   * HopperError when the server cannot be reached.
   */
  extendLease(ms: number): Promise<void>;
  /**
   * parentResults reads the job's parents (EnqueueOptions.after), in the order the job named
   * them, each with how it ended and what it left: a fan-in step gathers what its fan-out
   * produced. They come with the job when the worker asks for them (WorkerOptions
   * fetchParentResults) and fit the server's max_args_bytes; else they are read from the
   * server when called, so call it once and keep the answer. A job without parents has none.
   * It throws a LeaseLostError, and aborts signal, when the job is no longer this attempt's.
   */
  parentResults<R = unknown>(): Promise<ParentResult<R>[]>;
  /**
   * spawn adds jobs while the handler runs (docs/workflows.md, "Fan-out at run time"): each
   * goes in this job's workflow, as its step (given, or named for it), and every job that
   * waits for this one waits for them too, so a merge step after a split step runs once the
   * split and every chunk it spawned have ended. All or none, in one transaction. A step name
   * already in the workflow returns that job (existing): a retried attempt that spawns the same
   * steps adds nothing. A job's after may name jobs that exist (this one, its parents, jobs an
   * earlier spawn returned). It throws a HopperError of code InvalidArgument naming the field
   * (jobs[1].queue) for bad input, and a LeaseLostError when the job is no longer this
   * attempt's.
   */
  spawn<A = unknown>(jobs: SpawnJob<A>[]): Promise<EnqueueResult<A>[]>;
}

/** SpawnJob is one job of RunningJob.spawn: a job as Client.enqueueMany takes it (no mergeKey). */
export interface SpawnJob<A = unknown> extends NewJob<A> {
  /**
   * step names the job in the running job's workflow (letters, digits, '_', '-', '.', ':', at
   * most 128); unset, the server names it. Only for a job that is a step of a workflow.
   */
  step?: string;
  /**
   * afterSteps names, by their step, jobs earlier in the same spawn that this one runs after
   * (their ids are not known before the call), after the jobs of after. A name no earlier job of
   * the call has is refused (InvalidArgument naming jobs[i].after_steps[k]).
   */
  afterSteps?: string[];
}

/**
 * Handler works one job. What it returns (any JSON value, or undefined) is stored as the
 * job's result. What it throws fails the attempt (retried with backoff while attempts are
 * left; the error's stack is recorded), unless it is a NoRetryError (fail for good), a
 * RetryAfterError (retry after a delay), a SnoozeError or a SuspendError.
 */
export type Handler<A = any> = (job: RunningJob<A>) => unknown;

/** HandlerOptions gives a kind its own limits. */
export interface HandlerOptions<A = any> {
  handle: Handler<A>;
  /** timeout is each attempt's limit in milliseconds, unless the job has its own (default none). */
  timeout?: number;
  /**
   * retryPolicy is this kind's backoff; the job's own fields come first, then these, then the
   * server's. Its retryBusinessErrors retries this kind's BusinessErrors while attempts are left.
   */
  retryPolicy?: RetryPolicy;
}

/** Handlers maps each kind to its handler. */
export type Handlers = Record<string, Handler | HandlerOptions>;

/**
 * Batch is the jobs one call of a BatchHandler runs, and what it says of each: a kind's jobs
 * claimed together (docs/workers.md, "Batches"), each keeping its own attempt, lease and
 * outcome. It is not safe to use after the handler has returned.
 */
export interface Batch<A = unknown> {
  /**
   * jobs are the batch's jobs: a group's in the group's order, or the kind's ungrouped jobs in
   * claim order. Each is a RunningJob of its own (its progress, heartbeat and lease).
   */
  readonly jobs: readonly RunningJob<A>[];
  /**
   * signal aborts when every job of the batch was told to stop (its reason: the last job's),
   * which the batch's timeout (the shortest of its jobs' timeouts) and a stopping worker's
   * grace do for all at once. A job told to stop alone (its lease lost) aborts its own signal.
   */
  readonly signal: AbortSignal;
  /**
   * fail sets the outcome of jobs[i] to error, as a Handler throwing it would (a NoRetryError,
   * a RetryAfterError, a SnoozeError, a SuspendError, a BusinessError…); undefined makes it
   * succeed again. The jobs not failed complete. It throws a RangeError when i is out of range.
   */
  fail(i: number, error: unknown): void;
  /**
   * setResult stores value (any JSON value) as the result of jobs[i] when it succeeds. It
   * throws a RangeError when i is out of range.
   */
  setResult(i: number, value: unknown): void;
}

/**
 * BatchHandler works the jobs of one batch in one call. Each job's outcome is its own: a job
 * failed with batch.fail ends as a Handler's throw would, the others complete (with what
 * batch.setResult gave them). What it throws fails every job of the batch, each as its own
 * attempt with its own retry budget; what it returns is ignored.
 */
export type BatchHandler<A = any> = (batch: Batch<A>) => unknown;

/** BatchHandlerOptions give a batch kind its handler, how its batches are claimed, and its limits. */
export interface BatchHandlerOptions<A = any> {
  handle: BatchHandler<A>;
  /**
   * maxJobs bounds the jobs of one batch (default 100). The server says what it takes
   * (BatchKind.max_jobs): a worker given one it refuses stops, its error the server's
   * INVALID_ARGUMENT naming the field (batch_kinds[i].max_jobs).
   */
  maxJobs?: number;
  /**
   * maxWait is the linger in ms (default 0): a batch with fewer than maxJobs jobs is claimed
   * once its oldest job has been due this long, so that it may fill meanwhile.
   */
  maxWait?: number;
  /** ungrouped batches the kind's jobs without a group key too; without it they are not claimed by this worker. */
  ungrouped?: boolean;
  /** timeout is each job's attempt limit in ms, unless the job has its own; a batch runs until its shortest. */
  timeout?: number;
  /** retryPolicy is the kind's backoff, as HandlerOptions.retryPolicy. */
  retryPolicy?: RetryPolicy;
}

/** BatchHandlers maps each batch kind to its batch handler. */
export type BatchHandlers = Record<string, BatchHandler | BatchHandlerOptions>;
