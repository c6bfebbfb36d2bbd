// Poll mode: the worker asks for jobs with long polls (Activate) and renews their leases itself.

import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import type { Tracker } from "./backoff.js";
import { toHopperError } from "./errors.js";
import type { ActivateRequest, ActivatedJob, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { LeaseLostError } from "./handler-errors.js";
import type { Attempt } from "./running-job.js";
import { sleep } from "./sleep.js";
import { toDuration } from "./time.js";

/** PollIntake is what the poll loop needs from its worker. */
export interface PollIntake {
  api: RpcClient<typeof WorkerService>;
  request: ActivateRequest;
  backoff: Tracker;
  /** freeSlots resolves with the number of free slots once there is one (0 when signal aborts). */
  freeSlots(signal: AbortSignal): Promise<number>;
  /** launch runs a job; undefined when the worker is stopping. */
  launch(job: ActivatedJob): Attempt | undefined;
  /** release hands a job this worker will not run back to its queue. */
  release(job: ActivatedJob, reason: string): Promise<void>;
}

/**
 * pollLoop asks for as many jobs as there are free slots, each poll waiting for a first job,
 * until signal aborts. A failed poll is retried with backoff.
 */
export async function pollLoop(p: PollIntake, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const n = await p.freeSlots(signal);
    if (signal.aborted) return;
    let jobs: ActivatedJob[];
    try {
      jobs = (await p.api.activate({ ...p.request, maxJobs: n }, { signal })).jobs;
    } catch (err) {
      if (signal.aborted) return;
      await sleep(p.backoff.fail(toHopperError(err).message), signal);
      continue;
    }
    p.backoff.succeed();
    for (const j of jobs) {
      if (!p.launch(j)) void p.release(j, "worker stopping");
    }
  }
}

/** LeaseKeeper is what lease renewal needs from its worker. */
export interface LeaseKeeper {
  api: RpcClient<typeof WorkerService>;
  /** lease is the worker's lease duration in ms. */
  lease: number;
  backoff: Tracker;
  running(): Attempt[];
}

/**
 * keepLeases renews the leases of running jobs every third of the lease until signal aborts
 * (a stream's leases are the server's to keep). A lease found lost stops its handler. When
 * the server cannot be reached, renewals are retried with backoff, never later than the
 * regular cadence.
 */
export async function keepLeases(k: LeaseKeeper, signal: AbortSignal): Promise<void> {
  let wait = k.lease / 3;
  while (await sleep(wait, signal)) {
    wait = k.lease / 3;
    try {
      await extendAll(k, signal);
    } catch (err) {
      if (!signal.aborted) wait = Math.min(wait, k.backoff.fail(toHopperError(err).message));
    }
  }
}

/**
 * extendAll renews the lease of every running job; it stops at the first error that is not
 * about the job itself (the server is unreachable: the others would fail too).
 */
async function extendAll(k: LeaseKeeper, signal: AbortSignal): Promise<void> {
  for (const a of k.running()) {
    try {
      await k.api.extendLease({ id: a.job.id, leaseToken: a.job.leaseToken, duration: toDuration(a.lease) }, { signal });
      k.backoff.succeed();
    } catch (e) {
      const err = toHopperError(e);
      if (err.code !== Code.FailedPrecondition && err.code !== Code.NotFound) throw err;
      a.abort(new LeaseLostError());
    }
  }
}
