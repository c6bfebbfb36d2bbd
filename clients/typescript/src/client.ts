import { createClient } from "@connectrpc/connect";
import type { Client as RpcClient } from "@connectrpc/connect";
import { createTransport } from "./connection.js";
import type { ConnectionOptions } from "./connection.js";
import { jobSpec } from "./enqueue-options.js";
import type { EnqueueOptions } from "./enqueue-options.js";
import { toHopperError } from "./errors.js";
import { DeadLetterService, JobService, KindService, WorkflowService } from "./gen/hopper/v1/hopper_pb.js";
import { attemptFromProto, eventFromProto, jobFromProto } from "./job.js";
import type { Job, JobAttempt, JobEvent, JobState } from "./job.js";
import { encodeJSON } from "./json.js";
import { fromDuration, fromTimestamp, toTimestamp } from "./time.js";
import { batchWorkflow, stepsToProto, workflowFromProto } from "./workflow.js";
import type { EnqueuedWorkflow, NewBatch, NewWorkflow, WorkflowDetail, WorkflowInfo, WorkflowListOptions, WorkflowPage } from "./workflow.js";

/** CallOptions end a call early. */
export interface CallOptions {
  /** signal aborts the call (it then throws a HopperError of code Canceled). */
  signal?: AbortSignal;
}

/**
 * EnqueueResult is a stored job; existing says an idempotency key returned a job stored before,
 * merged that a merge key merged the enqueue into a waiting job (job is that job).
 */
export interface EnqueueResult<A = unknown> {
  job: Job<A>;
  existing: boolean;
  merged: boolean;
}

/** NewJob is one job of Client.enqueueMany. */
export interface NewJob<A = unknown> extends EnqueueOptions {
  kind: string;
  args?: A;
}

/** ListOptions select a page of jobs; unset fields don't filter. */
export interface ListOptions extends CallOptions {
  states?: JobState[];
  queues?: string[];
  kinds?: string[];
  /** errorCodes keeps the jobs whose last attempt failed with one of these business error codes. */
  errorCodes?: string[];
  /** fairnessKeys keeps the jobs of these fairness keys. */
  fairnessKeys?: string[];
  /** cursor continues from a page's nextCursor. */
  cursor?: string;
  /** limit is the page size (default 100, at most 10,000). */
  limit?: number;
  /** ascending lists oldest first (default newest first). */
  ascending?: boolean;
  /** createdAfter (inclusive) and createdBefore (exclusive) bound the creation time. */
  createdAfter?: Date;
  createdBefore?: Date;
}

/** Page is a page of jobs; nextCursor is "" on the last page. */
export interface Page<A = unknown> {
  jobs: Job<A>[];
  nextCursor: string;
}

/** DeadLetterFilter selects dead letters (failed jobs); unset fields don't filter. */
export interface DeadLetterFilter {
  queues?: string[];
  kinds?: string[];
  /** failedAfter (inclusive) and failedBefore (exclusive) bound when the jobs failed. */
  failedAfter?: Date;
  failedBefore?: Date;
}

/**
 * DeadLetterPage is a page of dead letters; replays marks the replayed ones: by job id, how
 * often it was replayed and its newest replay (a job never replayed has no entry).
 */
export interface DeadLetterPage extends Page {
  replays: Record<string, { count: number; lastJobId: string; lastReplayedAt?: Date }>;
}

/**
 * Replayed is what a replay made: the new jobs, whom the replay is recorded as done by, and
 * how many dead letters matching the filter were skipped as replayed before.
 */
export interface Replayed {
  jobs: Job[];
  replayedBy: string;
  skipped: number;
}

/** RetryOptions say how a failed job is retried in place (Client.retry). */
export interface RetryOptions {
  /** retries is how many more attempts the job gets (default 1, at most 1000). */
  retries?: number;
  /** args, when given, replace the job's args (any JSON value). */
  args?: unknown;
  /** runAt, when in the future, schedules the job for then. */
  runAt?: Date;
  /** reason is recorded in the job's history and the dead-letter audit log. */
  reason?: string;
  /** again retries a dead letter that was replayed before (recorded as forced). */
  again?: boolean;
}

/** Retried is what a bulk retry in place did: the jobs retried and how many were skipped. */
export interface Retried {
  jobs: Job[];
  retriedBy: string;
  skipped: number;
}

/** CompactOptions say which groups Client.compactKind compacts, and how. */
export interface CompactOptions {
  /** groupKey compacts only that group (default: every group of the kind). */
  groupKey?: string;
  /** over compacts a group only when more than this many of its jobs wait (default: two or more). */
  over?: number;
  /**
   * merge makes the new job's args: "keep" (default) the oldest job's, "replace" the newest's,
   * "append" the items of every job's list (jobs enqueued with merge "append").
   */
  merge?: "keep" | "replace" | "append";
}

/**
 * Compacted is what a compaction did: the numbers of groups compacted and jobs replaced, each
 * compacted group (the new job and the jobs it replaced, oldest first), and each group left as
 * it was because its jobs do not fit the merge policy (the job in the way, and why).
 */
export interface Compacted {
  groups: number;
  jobs: number;
  compacted: { groupKey: string; newJobId: string; replaced: string[] }[];
  refused: { groupKey: string; jobId: string; reason: string }[];
}

/**
 * Client enqueues, inspects, cancels, resumes, retries and replays jobs through `hopper serve`. It is
 * safe to share; every method throws a HopperError when the server refuses the call or
 * cannot be reached.
 */
export class Client {
  private readonly jobs: RpcClient<typeof JobService>;
  private readonly deadLetters: RpcClient<typeof DeadLetterService>;
  private readonly kinds: RpcClient<typeof KindService>;
  private readonly workflows: RpcClient<typeof WorkflowService>;

  constructor(options: ConnectionOptions) {
    const transport = createTransport(options);
    this.jobs = createClient(JobService, transport);
    this.deadLetters = createClient(DeadLetterService, transport);
    this.kinds = createClient(KindService, transport);
    this.workflows = createClient(WorkflowService, transport);
  }

  /** enqueue stores one job of kind with args (any JSON value; unset is {}). */
  async enqueue<A>(kind: string, args?: A, options: EnqueueOptions & CallOptions = {}): Promise<EnqueueResult<A>> {
    const res = await call(this.jobs.enqueue({ job: jobSpec(kind, args, options) }, options));
    return { job: jobFromProto<A>(res.job!), existing: res.existing, merged: res.merged };
  }

  /** enqueueMany stores several jobs in one transaction: all or none. */
  async enqueueMany<A>(jobs: NewJob<A>[], options: CallOptions = {}): Promise<EnqueueResult<A>[]> {
    const specs = jobs.map((j) => jobSpec(j.kind, j.args, j));
    const res = await call(this.jobs.enqueueBatch({ jobs: specs }, options));
    return res.results.map((r) => ({ job: jobFromProto<A>(r.job!), existing: r.existing, merged: r.merged }));
  }

  /**
   * enqueueWorkflow stores a workflow: every step's job in one transaction, all or none, each
   * step after the steps its after names. InvalidArgument names the bad field
   * (steps[2].job.after[0], steps[1].job.queue).
   */
  async enqueueWorkflow(workflow: NewWorkflow, options: CallOptions = {}): Promise<EnqueuedWorkflow> {
    const res = await call(this.workflows.enqueueWorkflow({ name: workflow.name, steps: stepsToProto(workflow.steps) }, options));
    return { workflow: workflowFromProto(res.workflow!), jobs: res.jobs.map((j) => jobFromProto(j)) };
  }

  /**
   * enqueueBatch stores a batch with a callback as one workflow (batchWorkflow): its jobs
   * (steps job-0, job-1…) and its callback (step "callback"), which runs once they have all
   * ended, failed or not; its handler counts them with countBatch(await job.parentResults()).
   * workflow.id is the batch's id.
   */
  async enqueueBatch(batch: NewBatch, options: CallOptions = {}): Promise<EnqueuedWorkflow> {
    return this.enqueueWorkflow(batchWorkflow(batch), options);
  }

  /** getWorkflow returns a workflow and its steps, parents first; NotFound when there is none. */
  async getWorkflow(id: string, options: CallOptions = {}): Promise<WorkflowDetail> {
    const res = await call(this.workflows.getWorkflow({ id }, options));
    return { workflow: workflowFromProto(res.workflow!), steps: res.steps.map((s) => ({ job: jobFromProto(s.job!), after: s.after })) };
  }

  /** listWorkflows returns a page of workflows, newest first unless ascending. */
  async listWorkflows(options: WorkflowListOptions & CallOptions = {}): Promise<WorkflowPage> {
    const res = await call(this.workflows.listWorkflows({
      name: options.name, states: options.states, cursor: options.cursor, limit: options.limit, ascending: options.ascending,
    }, options));
    return { workflows: res.workflows.map(workflowFromProto), nextCursor: res.nextCursor };
  }

  /**
   * cancelWorkflow cancels every step of a workflow that has not ended, in one transaction;
   * FailedPrecondition when every step has ended, NotFound when there is no such workflow.
   */
  async cancelWorkflow(id: string, options: { reason?: string } & CallOptions = {}): Promise<{ workflow: WorkflowInfo; canceled: Job[] }> {
    const res = await call(this.workflows.cancelWorkflow({ id, reason: options.reason }, options));
    return { workflow: workflowFromProto(res.workflow!), canceled: res.canceled.map((j) => jobFromProto(j)) };
  }

  /** get returns one job; a HopperError of code NotFound when there is none. */
  async get<A = unknown, R = unknown>(id: string, options: CallOptions = {}): Promise<Job<A, R>> {
    const res = await call(this.jobs.get({ id }, options));
    return jobFromProto<A, R>(res.job!);
  }

  /** list returns a page of jobs, newest first unless ascending. */
  async list(options: ListOptions = {}): Promise<Page> {
    const res = await call(this.jobs.list({
      states: options.states, queues: options.queues, kinds: options.kinds, cursor: options.cursor,
      limit: options.limit, ascending: options.ascending, createdAfter: toTimestamp(options.createdAfter),
      createdBefore: toTimestamp(options.createdBefore), errorCodes: options.errorCodes,
      fairnessKeys: options.fairnessKeys,
    }, options));
    return { jobs: res.jobs.map((j) => jobFromProto(j)), nextCursor: res.nextCursor };
  }

  /** listAll yields every job options select, a page at a time. */
  async *listAll(options: ListOptions = {}): AsyncGenerator<Job> {
    let cursor = options.cursor;
    do {
      const page = await this.list({ ...options, cursor });
      yield* page.jobs;
      cursor = page.nextCursor;
    } while (cursor);
  }

  /** events returns a job's history: its state transitions and its ended attempts. */
  async events(id: string, options: CallOptions = {}): Promise<{ events: JobEvent[]; attempts: JobAttempt[] }> {
    const res = await call(this.jobs.events({ id }, options));
    return { events: res.events.map(eventFromProto), attempts: res.attempts.map(attemptFromProto) };
  }

  /**
   * cancel cancels a job that has not ended; a running job's worker is told to stop. A
   * HopperError of code FailedPrecondition when it already ended.
   */
  async cancel(id: string, options: { reason?: string } & CallOptions = {}): Promise<Job> {
    const res = await call(this.jobs.cancel({ id, reason: options.reason }, options));
    return jobFromProto(res.job!);
  }

  /**
   * resume moves a suspended job back to its queue; data (any JSON value) reaches its next
   * attempt as job.resumeData. FailedPrecondition for a job that is not suspended.
   */
  async resume(id: string, options: { data?: unknown; reason?: string } & CallOptions = {}): Promise<Job> {
    const res = await call(this.jobs.resume({ id, data: encodeJSON(options.data), reason: options.reason }, options));
    return jobFromProto(res.job!);
  }

  /**
   * listDeadLetters returns a page of dead letters (failed jobs), newest first: those never
   * replayed, or with includeReplayed all of them, the replayed ones marked in replays.
   */
  async listDeadLetters(
    options: DeadLetterFilter & { includeReplayed?: boolean; errorCodes?: string[]; cursor?: string; limit?: number } & CallOptions = {},
  ): Promise<DeadLetterPage> {
    const res = await call(this.deadLetters.list({
      filter: filter(options), cursor: options.cursor, limit: options.limit, includeReplayed: options.includeReplayed,
      errorCodes: options.errorCodes,
    }, options));
    const replays: DeadLetterPage["replays"] = {};
    for (const [id, r] of Object.entries(res.replays)) {
      replays[id] = { count: r.count, lastJobId: r.lastJobId, lastReplayedAt: fromTimestamp(r.lastReplayedAt) };
    }
    return { jobs: res.jobs.map((j) => jobFromProto(j)), nextCursor: res.nextCursor, replays };
  }

  /**
   * deadLetterStats counts the dead letters listDeadLetters lists, says how long the oldest has
   * waited (ms), and counts the replayed ones apart.
   */
  async deadLetterStats(
    options: CallOptions = {},
  ): Promise<{ count: number; oldestFailedAt?: Date; oldestAge?: number; replayed: number }> {
    const res = await call(this.deadLetters.stats({}, options));
    return {
      count: Number(res.count), oldestFailedAt: fromTimestamp(res.oldestFailedAt), oldestAge: fromDuration(res.oldestAge),
      replayed: Number(res.replayed),
    };
  }

  /**
   * replay replays one dead letter as a new queued job with its work and lineage; the dead
   * letter stays as it was. NotFound when there is none, FailedPrecondition when the job is
   * not failed, AlreadyExists (naming the earlier replay) when it was replayed before unless
   * again is set.
   */
  async replay(
    id: string, options: { again?: boolean; reason?: string } & CallOptions = {},
  ): Promise<{ job: Job; replayedBy: string }> {
    const res = await call(this.deadLetters.replay({ id, again: options.again, reason: options.reason }, options));
    return { job: jobFromProto(res.job!), replayedBy: res.replayedBy };
  }

  /**
   * retry resolves a failed job in place: the same job (id, idempotency key, history) goes
   * back to its queue with more attempts and, if given, corrected args, audited as done by the
   * API key's name. FailedPrecondition when the job is not failed, AlreadyExists when it is a
   * dead letter that was replayed (unless again), NotFound, or InvalidArgument naming the field.
   */
  async retry(id: string, options: RetryOptions & CallOptions = {}): Promise<{ job: Job; retriedBy: string }> {
    const res = await call(this.jobs.retry({
      id, retries: options.retries, args: options.args === undefined ? "" : encodeJSON(options.args),
      runAt: toTimestamp(options.runAt), reason: options.reason, again: options.again,
    }, options));
    return { job: jobFromProto(res.job!), retriedBy: res.retriedBy };
  }

  /**
   * setRetries sets the attempt budget (maxAttempts, counting the attempts made) of a job that
   * has not ended. FailedPrecondition for an ended job; InvalidArgument (field max_attempts) for
   * a budget below what it has used.
   */
  async setRetries(id: string, maxAttempts: number, options: CallOptions = {}): Promise<Job> {
    const res = await call(this.jobs.setRetries({ id, maxAttempts }, options));
    return jobFromProto(res.job!);
  }

  /**
   * retryMany retries in place, oldest first and in one transaction, up to limit (default
   * 100, at most 1000) dead letters matching the filter that were never replayed; skipped
   * counts the replayed ones it left.
   */
  async retryMany(
    options: DeadLetterFilter & { limit?: number; retries?: number; reason?: string } & CallOptions = {},
  ): Promise<Retried> {
    const res = await call(this.deadLetters.retryMany({
      filter: filter(options), limit: options.limit, retries: options.retries, reason: options.reason,
    }, options));
    return { jobs: res.jobs.map((j) => jobFromProto(j)), retriedBy: res.retriedBy, skipped: res.skipped };
  }

  /**
   * replayMany replays, oldest first and in one transaction, up to limit (default 100, at
   * most 1000) dead letters matching the filter that were never replayed, so calling it
   * again continues where it stopped.
   */
  async replayMany(options: DeadLetterFilter & { limit?: number } & CallOptions = {}): Promise<Replayed> {
    const res = await call(this.deadLetters.replayMany({ filter: filter(options), limit: options.limit }, options));
    return { jobs: res.jobs.map((j) => jobFromProto(j)), replayedBy: res.replayedBy, skipped: res.skipped };
  }

  /**
   * compactKind replaces, in each group of kind (its jobs with one group key) in which more
   * than options.over jobs wait (queued, never claimed), those jobs by one new job whose args
   * options.merge makes; each replaced job ends canceled, "compacted into <new id>". It needs
   * the admin scope; InvalidArgument names a bad field (kind, group_key, over, merge).
   */
  async compactKind(kind: string, options: CompactOptions & CallOptions = {}): Promise<Compacted> {
    const res = await call(this.kinds.compact({
      kind, groupKey: options.groupKey, over: options.over, merge: options.merge,
    }, options));
    return {
      groups: res.groups, jobs: res.jobs,
      compacted: res.compacted.map((g) => ({ groupKey: g.groupKey, newJobId: g.newJobId, replaced: [...g.replaced] })),
      refused: res.refused.map((g) => ({ groupKey: g.groupKey, jobId: g.jobId, reason: g.reason })),
    };
  }

  /**
   * lineage returns the compactions job id took part in: the jobs it replaced (compactedFrom,
   * oldest first) and the job that replaced it (compactedInto, "" when none did).
   */
  async lineage(id: string, options: CallOptions = {}): Promise<{ compactedFrom: string[]; compactedInto: string }> {
    const res = await call(this.kinds.lineage({ id }, options));
    return { compactedFrom: [...res.compactedFrom], compactedInto: res.compactedInto };
  }
}

function filter(f: DeadLetterFilter) {
  return { queues: f.queues, kinds: f.kinds, failedAfter: toTimestamp(f.failedAfter), failedBefore: toTimestamp(f.failedBefore) };
}

/** call awaits an RPC, turning what it throws into a HopperError. */
async function call<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw toHopperError(err);
  }
}
