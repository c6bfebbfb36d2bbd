import { create } from "@bufbuild/protobuf";
import type { RetryPolicy } from "./backoff.js";
import { JobSpecSchema } from "./gen/hopper/v1/hopper_pb.js";
import type { JobSpec } from "./gen/hopper/v1/hopper_pb.js";
import { policyToProto } from "./job.js";
import { encodeJSON } from "./json.js";
import { toDuration, toTimestamp } from "./time.js";

/**
 * EnqueueOptions are a job's options; every one may be left out, taking the server's
 * default. Durations are milliseconds. The server checks them and answers a bad one with a
 * HopperError of code InvalidArgument naming the field.
 */
export interface EnqueueOptions {
  /** queue (default "default"). */
  queue?: string;
  /** priority: higher runs first. */
  priority?: number;
  /** runAt postpones the job until then; set at most one of runAt and delay. */
  runAt?: Date;
  /** delay postpones the job by this many milliseconds. */
  delay?: number;
  /** maxAttempts bounds the attempts (the server's default is 25). */
  maxAttempts?: number;
  /** timeout bounds each attempt, in milliseconds. */
  timeout?: number;
  /** headers travel with the job to its worker. */
  headers?: Record<string, string>;
  /** idempotencyKey: a second enqueue with it returns the first job (existing), or ALREADY_EXISTS for other args. */
  idempotencyKey?: string;
  /** idempotencyRetention is how long the key is held, in milliseconds (the server's default is 24 h). */
  idempotencyRetention?: number;
  /** groupKey groups related jobs. */
  groupKey?: string;
  /**
   * fairnessKey names the tenant the job runs for (a customer id, say): when several keys have
   * jobs due in one queue, claims share its slots between them, round robin, so that one key's
   * flood does not delay another key's jobs; jobs without a key are one more key. Priority
   * still comes first. At most 128 bytes, no control characters.
   */
  fairnessKey?: string;
  /** retryPolicy shapes the backoff between failed attempts, and may retry business errors. */
  retryPolicy?: RetryPolicy;
  /** maxRescues bounds how often the job is requeued after losing its worker (1–1000, -1: unbounded). */
  maxRescues?: number;
  /**
   * mergeKey merges the enqueue into the job of the same kind and key that waits for its first
   * worker, instead of adding a job (merged in the result).
   */
  mergeKey?: string;
  /** merge is the merge policy: "keep" (the default), "replace" or "append" (the job's args are a list). */
  merge?: "keep" | "replace" | "append";
  /**
   * after names jobs (ids) this one waits for: it is enqueued in state "waiting" and released
   * when the last of them ends. Each must exist, or come earlier in the same enqueueMany
   * (docs/workflows.md).
   */
  after?: string[];
  /**
   * onParentFailure is what a parent's failure or cancel does: "cancel" (the default; the job
   * and its own waiting children end canceled), "run" (it runs once every parent has ended) or
   * "skip" (it ends canceled, but counts as succeeded for its children). Only with after.
   */
  onParentFailure?: "cancel" | "run" | "skip";
}

/** jobSpec is the JobSpec of a job of kind with args and options. */
export function jobSpec(kind: string, args: unknown, o: EnqueueOptions = {}): JobSpec {
  return create(JobSpecSchema, {
    kind, args: encodeJSON(args), queue: o.queue, priority: o.priority, runAt: toTimestamp(o.runAt),
    delay: toDuration(o.delay), maxAttempts: o.maxAttempts, timeout: toDuration(o.timeout), headers: o.headers,
    idempotencyKey: o.idempotencyKey, idempotencyRetention: toDuration(o.idempotencyRetention),
    groupKey: o.groupKey, retryPolicy: policyToProto(o.retryPolicy), maxRescues: o.maxRescues,
    mergeKey: o.mergeKey, merge: o.merge, fairnessKey: o.fairnessKey,
    after: o.after, onParentFailure: o.onParentFailure,
  });
}
