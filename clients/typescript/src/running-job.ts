import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { toHopperError } from "./errors.js";
import type { EnqueueResult } from "./client.js";
import { jobSpec } from "./enqueue-options.js";
import type { ActivatedJob, EnqueueResponse, ParentResult as ParentResultPb, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import type { ParentOutcome, ParentResult, RunningJob, SpawnJob } from "./handler.js";
import { jobFromProto } from "./job.js";
import { LeaseLostError } from "./handler-errors.js";
import { decodeJSON } from "./json.js";
import { clipText, type Limits } from "./text.js";
import { fromTimestamp, toDuration } from "./time.js";

/**
 * Attempt is one attempt this worker runs: a job, the lease token it came with, and why it
 * was told to stop, if it was. Its AbortSignal is made only when a handler asks for it: most
 * attempts end without one.
 */
export class Attempt {
  readonly key: string;
  /** lease is how long each renewal sets the lease for, in ms. */
  lease: number;
  /** timeout is the attempt's execution limit in ms, once it is known (undefined: none). */
  timeout: number | undefined;
  /** done resolves when the handler has returned and its outcome is reported. */
  done: Promise<void> = Promise.resolve();
  /**
   * Signs of life the server could not be reached for (an outage, a restart): kept, the
   * latest progress winning, and sent with the handler's next call or before the outcome.
   */
  pending: { percent: number; message: string } | undefined;
  beat = false;
  private stopped = false;
  private reason: unknown;
  private controller: AbortController | undefined;

  /** handled is called once the handler has returned, before the outcome is reported (and at the latest when it is); it runs once, however often it is called. */
  readonly handled: () => void;

  constructor(readonly job: ActivatedJob, lease: number, handled: (() => void) | undefined, readonly limits: Limits) {
    this.key = attemptKey(job.id, job.leaseToken);
    this.lease = lease;
    this.handled = once(handled ?? noop);
  }

  /** abort tells the handler to stop, for reason; only the first reason counts. */
  abort(reason: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  /** cause is why the attempt was told to stop; undefined while it was not. */
  get cause(): unknown {
    return this.stopped ? this.reason : undefined;
  }

  /** signal aborts when the attempt is told to stop. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

function noop(): void {}

/** attemptKey names an attempt: a job can be here twice for a moment, under two tokens. */
export function attemptKey(id: string, leaseToken: bigint): string {
  return `${id}/${leaseToken}`;
}

/** Running is what a handler sees of an attempt; its calls go to api. */
export class Running<A> implements RunningJob<A> {
  constructor(
    private readonly attempt_: Attempt,
    readonly args: A,
    private readonly api: RpcClient<typeof WorkerService>,
    private readonly leaseSet: () => void,
  ) {}

  get id() { return this.attempt_.job.id; }
  get kind() { return this.attempt_.job.kind; }
  get queue() { return this.attempt_.job.queue; }
  get headers() { return this.attempt_.job.headers; }
  get attempt() { return this.attempt_.job.attempt; }
  get maxAttempts() { return this.attempt_.job.maxAttempts; }
  get leaseToken() { return this.attempt_.job.leaseToken; }
  get createdAt() { return fromTimestamp(this.attempt_.job.createdAt); }
  get timeout() { return this.attempt_.timeout; }
  get checkpoint() { return (this.decoded ??= this.decodePayloads()).checkpoint; }
  get resumeData() { return (this.decoded ??= this.decodePayloads()).resumeData; }
  get signal() { return this.attempt_.signal; }

  progress(percent: number, message = ""): Promise<void> {
    percent = Math.min(100, Math.max(0, Math.round(percent))) || 0;
    this.attempt_.pending = { percent, message: clipText(message, this.attempt_.limits.progressMessageBytes) }; // the latest wins
    return this.check(sendPending(this.api, this.attempt_), true);
  }

  heartbeat(): Promise<void> {
    this.attempt_.beat = true;
    return this.check(sendPending(this.api, this.attempt_), true);
  }

  async extendLease(ms: number): Promise<void> {
    await this.check(this.api.extendLease({ ...this.ref(), duration: toDuration(ms) }));
    this.attempt_.lease = ms; // later renewals keep it
    this.leaseSet(); // a shorter lease needs its next renewal sooner
  }

  async parentResults<R = unknown>(): Promise<ParentResult<R>[]> {
    const job = this.attempt_.job;
    // An empty list is not trusted: the job may have no parents, or a server older than
    // fetch_parent_results sent none. The call tells.
    if (job.parentResults.length > 0 && !job.parentResultsOmitted) return job.parentResults.map((p) => parentFromProto<R>(p));
    let parents: ParentResultPb[] = [];
    await this.check(this.api.parentResults(this.ref()).then((res) => { parents = res.parents; }));
    return parents.map((p) => parentFromProto<R>(p));
  }

  async spawn<A = unknown>(jobs: SpawnJob<A>[]): Promise<EnqueueResult<A>[]> {
    let results: EnqueueResponse[] = [];
    const req = { ...this.ref(), jobs: jobs.map((j) => ({ step: j.step ?? "", afterSteps: j.afterSteps ?? [], job: jobSpec(j.kind, j.args, j) })) };
    await this.check(this.api.spawn(req).then((res) => { results = res.results; }));
    return results.map((r) => ({ job: jobFromProto<A>(r.job!), existing: r.existing, merged: r.merged }));
  }

  private decoded: { checkpoint: unknown; resumeData: unknown } | undefined;

  private decodePayloads() {
    return { checkpoint: decodeJSON(this.attempt_.job.checkpoint), resumeData: decodeJSON(this.attempt_.job.resumeData) };
  }

  private ref() {
    return { id: this.attempt_.job.id, leaseToken: this.attempt_.job.leaseToken };
  }

  /**
   * check turns a refused lease into a LeaseLostError and stops the handler, as in process;
   * with kept, an unreachable server is no error (what was sent is kept for later).
   */
  private async check(call: Promise<unknown>, kept = false): Promise<void> {
    try {
      await call;
    } catch (e) {
      const err = toHopperError(e);
      if (kept && err.code === Code.Unavailable) return;
      if (err.code !== Code.FailedPrecondition && err.code !== Code.NotFound) throw err;
      const lost = new LeaseLostError(`job ${this.id}: lease lost`);
      this.attempt_.abort(lost);
      throw lost;
    }
  }
}

/** parentFromProto is p with its result decoded. */
function parentFromProto<R>(p: ParentResultPb): ParentResult<R> {
  return {
    id: p.id, kind: p.kind, step: p.step, outcome: p.outcome as ParentOutcome, state: p.state, result: decodeJSON<R>(p.result),
    error: p.error, finishedAt: fromTimestamp(p.finishedAt), expired: p.expired,
  };
}

/** once returns f made to run at most once. */
export function once(f: () => void): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    f();
  };
}

/**
 * sendPending sends a's kept progress, or else its owed heartbeat (a progress counts as one),
 * and forgets what it sent unless the server could not be reached (it throws then, Unavailable,
 * and keeps it). Other errors throw too, what was sent forgotten.
 */
export async function sendPending(api: RpcClient<typeof WorkerService>, a: Attempt): Promise<void> {
  const progress = a.pending;
  if (!progress && !a.beat) return;
  const ref = { id: a.job.id, leaseToken: a.job.leaseToken };
  try {
    if (progress) await api.reportProgress({ ...ref, ...progress });
    else await api.heartbeat(ref);
  } catch (e) {
    const err = toHopperError(e);
    if (err.code === Code.Unavailable) throw err;
    forget(a, progress);
    throw err;
  }
  forget(a, progress);
}

function forget(a: Attempt, sent: Attempt["pending"]): void {
  if (a.pending === sent) { // not replaced meanwhile
    a.pending = undefined;
    a.beat = false;
  }
}
