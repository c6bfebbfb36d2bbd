// Poll mode: the worker asks for jobs with long polls (Activate), as many as it has free
// slots. A slot is free again as soon as its handler returns, before its outcome is reported.

import type { Client as RpcClient } from "@connectrpc/connect";
import type { Tracker } from "./backoff.js";
import { type HopperError, isRefusal, toHopperError } from "./errors.js";
import type { ActivateRequest, ActivatedJob, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { Notifier } from "./notifier.js";
import { type Attempt, once } from "./running-job.js";
import { sleep } from "./sleep.js";

/** PollIntake is what the poll loop needs from its worker. */
export interface PollIntake {
  api: RpcClient<typeof WorkerService>;
  request: ActivateRequest;
  backoff: Tracker;
  /** concurrency is how many handlers may run at once. */
  concurrency: number;
  /** launch runs a job and calls handled once its handler has returned; undefined when the worker is stopping. */
  launch(job: ActivatedJob, handled: () => void): Attempt | undefined;
  /** release hands a job this worker will not run back to its queue. */
  release(job: ActivatedJob, reason: string): Promise<void>;
  /** refused stops the worker taking jobs: the server refused its API key. */
  refused(err: HopperError): void;
}

/**
 * pollLoop asks for as many jobs as there are free slots, each poll waiting for a first job,
 * until signal aborts. A failed poll is retried with backoff.
 */
export async function pollLoop(p: PollIntake, signal: AbortSignal): Promise<void> {
  const slots = new Slots(p.concurrency);
  while (!signal.aborted) {
    const n = await slots.free(signal);
    if (signal.aborted) return;
    let jobs: ActivatedJob[];
    try {
      jobs = (await p.api.activate({ ...p.request, maxJobs: n }, { signal })).jobs;
    } catch (err) {
      if (signal.aborted) return;
      const he = toHopperError(err);
      if (isRefusal(he)) {
        p.refused(he); // asking again cannot help
        return;
      }
      await sleep(p.backoff.fail(he.message), signal);
      continue;
    }
    p.backoff.succeed();
    for (const j of jobs) {
      slots.take();
      if (!p.launch(j, once(() => slots.give()))) {
        slots.give();
        void p.release(j, "worker stopping");
      }
    }
  }
}

/** How long a poll with few free slots waits for more. */
const pollCoalesce = 2;

/** Slots counts the handlers running, at most size at once. */
class Slots {
  private busy = 0;
  private readonly freed = new Notifier();

  constructor(private readonly size: number) {}

  take(): void {
    this.busy++;
  }

  give(): void {
    this.busy--;
    this.freed.notify();
  }

  /**
   * free waits for a free slot and returns how many are free (0 when signal aborts). A busy
   * worker frees its slots one job at a time: when fewer than a quarter are free, it waits a
   * moment (2 ms) for more, so that one poll fills several slots instead of each job costing a
   * round trip and a claim.
   */
  async free(signal: AbortSignal): Promise<number> {
    while (this.busy >= this.size && !signal.aborted) await this.freed.wait(signal);
    const enough = Math.max(Math.floor(this.size / 4), 1);
    if (this.size - this.busy < enough && !signal.aborted) {
      const moment = new AbortController();
      const end = () => moment.abort();
      const timer = setTimeout(end, pollCoalesce);
      signal.addEventListener("abort", end, { once: true });
      while (this.size - this.busy < enough && !moment.signal.aborted) await this.freed.wait(moment.signal);
      clearTimeout(timer);
      signal.removeEventListener("abort", end);
    }
    return signal.aborted ? 0 : this.size - this.busy;
  }
}
