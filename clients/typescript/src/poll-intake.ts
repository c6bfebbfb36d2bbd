// Poll mode: the worker asks for jobs with long polls (Activate).

import type { Client as RpcClient } from "@connectrpc/connect";
import type { Tracker } from "./backoff.js";
import { toHopperError } from "./errors.js";
import type { ActivateRequest, ActivatedJob, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import type { Attempt } from "./running-job.js";
import { sleep } from "./sleep.js";

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
