// The TypeScript SDK of Hopper: a Client that enqueues and inspects jobs through
// `hopper serve`, and a Worker that runs them with handlers, by kind.

export { Code } from "@connectrpc/connect";
export type { RetryPolicy } from "./backoff.js";
export { Client } from "./client.js";
export type {
  CallOptions, CompactOptions, Compacted, DeadLetterFilter, DeadLetterPage, EnqueueResult, ListOptions, NewJob, Page, Replayed,
} from "./client.js";
export { bearer, createTransport } from "./connection.js";
export type { ConnectionOptions } from "./connection.js";
export type { EnqueueOptions } from "./enqueue-options.js";
export { codeName, HopperError, NoLimitsError } from "./errors.js";
export type {
  Batch, BatchHandler, BatchHandlerOptions, BatchHandlers, Handler, HandlerOptions, Handlers, ParentOutcome, ParentResult, RunningJob, SpawnJob,
} from "./handler.js";
export {
  BusinessError, CheckpointError, failWithCheckpoint,
  JobTimeoutError, LeaseLostError, NoRetryError, RetryAfterError, ShutdownError, SnoozeError, SuspendError,
} from "./handler-errors.js";
export type { SuspendOptions } from "./handler-errors.js";
export type { Job, JobAttempt, JobEvent, JobState } from "./job.js";
export type { Logger } from "./logger.js";
export type { Observer, WorkerEvent } from "./observe.js";
export { Worker } from "./worker.js";
export { batchCallbackStep, batchJobStep, batchWorkflow, countBatch } from "./workflow.js";
export type {
  BatchCounts, BatchJob, EnqueuedWorkflow, NewBatch, NewWorkflow, WorkflowDetail, WorkflowInfo, WorkflowListOptions, WorkflowPage,
  WorkflowState, WorkflowStep,
} from "./workflow.js";
export type { WorkerOptions } from "./worker.js";
