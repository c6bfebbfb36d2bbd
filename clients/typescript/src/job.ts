import { create } from "@bufbuild/protobuf";
import { RetryPolicySchema } from "./gen/hopper/v1/hopper_pb.js";
import type { Attempt as AttemptPb, Event as EventPb, Job as JobPb, RetryPolicy as RetryPolicyPb } from "./gen/hopper/v1/hopper_pb.js";
import type { RetryPolicy } from "./backoff.js";
import { decodeJSON } from "./json.js";
import { fromDuration, fromTimestamp, toDuration } from "./time.js";

/** JobState is where a job is in its life. */
export type JobState = "scheduled" | "queued" | "running" | "suspended" | "completed" | "failed" | "canceled";

/**
 * Job is a job as stored. args, result, checkpoint and resumeData are the JSON values they
 * were given as (undefined when unset); times are Dates and durations milliseconds. A caller
 * without the read scope gets back only id, kind, queue, state and times from an enqueue.
 */
export interface Job<A = unknown, R = unknown> {
  id: string;
  kind: string;
  queue: string;
  priority: number;
  args: A;
  headers: Record<string, string>;
  state: JobState;
  /** attempt counts attempts that used the retry budget, a running one included. */
  attempt: number;
  maxAttempts: number;
  /** leaseToken fences the current (or last) lease. */
  leaseToken: bigint;
  runAt?: Date;
  timeout?: number;
  workerId: string;
  leaseExpiresAt?: Date;
  heartbeatAt?: Date;
  progressPercent: number;
  progressMessage: string;
  /** result is what the last successful attempt returned. */
  result?: R;
  lastError: string;
  /** lastErrorCode is the business error code the last attempt failed with, if any. */
  lastErrorCode: string;
  idempotencyKey: string;
  groupKey: string;
  mergeKey: string;
  /** fairnessKey is the tenant the job is claimed for (EnqueueOptions.fairnessKey); "" for none. */
  fairnessKey: string;
  /** originalId is the first job of a replayed job's lineage. */
  originalId: string;
  replayCount: number;
  createdAt?: Date;
  startedAt?: Date;
  finishedAt?: Date;
  updatedAt?: Date;
  expiresAt?: Date;
  /** stalled: running with a valid lease but no sign of life for a while. */
  stalled: boolean;
  /** checkpoint is what a suspended, snoozed or failed attempt left for the next one. */
  checkpoint?: unknown;
  deadlineAt?: Date;
  resumeData?: unknown;
  /** rescues counts how often the job went back to its queue because its worker was lost. */
  rescues: number;
  maxRescues: number;
  /** workflowId is the workflow the job is a step of, step its step's name; both "" for a job enqueued on its own. */
  workflowId: string;
  step: string;
}

/** jobFromProto is j with its JSON payloads decoded. */
export function jobFromProto<A = unknown, R = unknown>(j: JobPb): Job<A, R> {
  return {
    id: j.id, kind: j.kind, queue: j.queue, priority: j.priority, args: decodeJSON<A>(j.args) as A,
    headers: { ...j.headers }, state: j.state as JobState, attempt: j.attempt, maxAttempts: j.maxAttempts,
    leaseToken: j.leaseToken, runAt: fromTimestamp(j.runAt), timeout: fromDuration(j.timeout), workerId: j.workerId,
    leaseExpiresAt: fromTimestamp(j.leaseExpiresAt), heartbeatAt: fromTimestamp(j.heartbeatAt),
    progressPercent: j.progressPercent, progressMessage: j.progressMessage, result: decodeJSON<R>(j.result),
    lastError: j.lastError, lastErrorCode: j.lastErrorCode, idempotencyKey: j.idempotencyKey, groupKey: j.groupKey, mergeKey: j.mergeKey,
    fairnessKey: j.fairnessKey, originalId: j.originalId,
    replayCount: j.replayCount, createdAt: fromTimestamp(j.createdAt), startedAt: fromTimestamp(j.startedAt),
    finishedAt: fromTimestamp(j.finishedAt), updatedAt: fromTimestamp(j.updatedAt),
    expiresAt: fromTimestamp(j.expiresAt), stalled: j.stalled, checkpoint: decodeJSON(j.checkpoint),
    deadlineAt: fromTimestamp(j.deadlineAt), resumeData: decodeJSON(j.resumeData), rescues: j.rescues,
    maxRescues: j.maxRescues, workflowId: j.workflowId, step: j.step,
  };
}

/** JobEvent is one state transition of a job. */
export interface JobEvent {
  seq: bigint;
  at?: Date;
  /** from is "" for the creating event. */
  from: string;
  to: string;
  /** actor: api, worker, leader, server or operator. */
  actor: string;
  reason: string;
}

/** JobAttempt is one ended attempt of a job. */
export interface JobAttempt {
  leaseToken: bigint;
  attempt: number;
  workerId: string;
  startedAt?: Date;
  endedAt?: Date;
  /** outcome: ok, error, timeout, panic, lease_expired, canceled… */
  outcome: string;
  error: string;
  stack: string;
  /** errorCode is the business error code the attempt failed with, if any. */
  errorCode: string;
}

export function eventFromProto(e: EventPb): JobEvent {
  return { seq: e.seq, at: fromTimestamp(e.at), from: e.from, to: e.to, actor: e.actor, reason: e.reason };
}

export function attemptFromProto(a: AttemptPb): JobAttempt {
  return {
    leaseToken: a.leaseToken, attempt: a.attempt, workerId: a.workerId, startedAt: fromTimestamp(a.startedAt),
    endedAt: fromTimestamp(a.endedAt), outcome: a.outcome, error: a.error, stack: a.stack,
    errorCode: a.errorCode,
  };
}

/** policyFromProto is p in milliseconds; unset fields are left out. */
export function policyFromProto(p: RetryPolicyPb | undefined): RetryPolicy | undefined {
  if (!p) return undefined;
  return {
    base: fromDuration(p.base), multiplier: p.multiplier || undefined, cap: fromDuration(p.cap), jitter: p.jitter || undefined,
    retryBusinessErrors: p.retryBusinessErrors || undefined,
  };
}

/** policyToProto is p on the wire; unset stays unset. */
export function policyToProto(p: RetryPolicy | undefined): RetryPolicyPb | undefined {
  if (!p) return undefined;
  return create(RetryPolicySchema, {
    base: toDuration(p.base), multiplier: p.multiplier, cap: toDuration(p.cap), jitter: p.jitter,
    retryBusinessErrors: p.retryBusinessErrors,
  });
}
