import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { toHopperError } from "./errors.js";
import type { ActivatedJob, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import type { RunningJob } from "./handler.js";
import { LeaseLostError } from "./handler-errors.js";
import { decodeJSON } from "./json.js";
import { clipText, MAX_PROGRESS_MESSAGE_BYTES } from "./text.js";
import { fromDuration, fromTimestamp, toDuration } from "./time.js";

/** Attempt is one attempt this worker runs: a job, the lease token it came with and its controls. */
export interface Attempt {
  readonly key: string;
  readonly job: ActivatedJob;
  readonly controller: AbortController;
  /** lease is how long each renewal sets the lease for, in ms. */
  lease: number;
  /** done resolves when the handler has returned and its outcome is reported. */
  done: Promise<void>;
}

/** attemptKey names an attempt: a job can be here twice for a moment, under two tokens. */
export function attemptKey(id: string, leaseToken: bigint): string {
  return `${id}/${leaseToken}`;
}

/** runningJob is what a handler sees of attempt a; its calls go to api. */
export function runningJob<A>(a: Attempt, args: A, api: RpcClient<typeof WorkerService>): RunningJob<A> {
  const j = a.job;
  const ref = { id: j.id, leaseToken: j.leaseToken };
  // check turns a refused lease into a LeaseLostError and stops the handler, as in process.
  const check = async (call: Promise<unknown>) => {
    try {
      await call;
    } catch (e) {
      const err = toHopperError(e);
      if (err.code !== Code.FailedPrecondition && err.code !== Code.NotFound) throw err;
      const lost = new LeaseLostError(`job ${j.id}: lease lost`);
      a.controller.abort(lost);
      throw lost;
    }
  };
  return {
    id: j.id, kind: j.kind, queue: j.queue, args, headers: j.headers, attempt: j.attempt,
    maxAttempts: j.maxAttempts, leaseToken: j.leaseToken, createdAt: fromTimestamp(j.createdAt),
    timeout: fromDuration(j.timeout), checkpoint: decodeJSON(j.checkpoint), resumeData: decodeJSON(j.resumeData),
    signal: a.controller.signal,
    progress: (percent, message = "") =>
      check(api.reportProgress({ ...ref, percent: Math.min(100, Math.max(0, Math.round(percent))) || 0, message: clipText(message, MAX_PROGRESS_MESSAGE_BYTES) })),
    heartbeat: () => check(api.heartbeat(ref)),
    async extendLease(ms) {
      await check(api.extendLease({ ...ref, duration: toDuration(ms) }));
      a.lease = ms; // later renewals keep it
    },
  };
}
