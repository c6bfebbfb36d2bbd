// Poll mode: the worker asks for jobs with long polls (Activate), as many as it has free
// slots. A slot is free again as soon as its handler returns, before its outcome is reported.

import { Code } from "@connectrpc/connect";
import type { Client as RpcClient } from "@connectrpc/connect";
import type { Tracker } from "./backoff.js";
import { type HopperError, isRefusal, toHopperError } from "./errors.js";
import type { ActivateRequest, ActivatedJob, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { Notifier } from "./notifier.js";
import { grouped } from "./batch.js";
import { once } from "./running-job.js";
import { sleep } from "./sleep.js";
import { fromDuration, toDuration } from "./time.js";

/** PollIntake is what the poll loop needs from its worker. */
export interface PollIntake {
  api: RpcClient<typeof WorkerService>;
  request: ActivateRequest;
  backoff: Tracker;
  /** concurrency is how many handlers may run at once. */
  concurrency: number;
  /** kindConcurrency bounds the handlers of a kind that may run at once (WorkerOptions.kindConcurrency). */
  kindConcurrency?: Record<string, number>;
  /**
   * launch runs jobs, a job or a batch's (ActivatedJob.batchId), and calls handled once its
   * handler has returned; false when the worker is stopping.
   */
  launch(jobs: ActivatedJob[], handled: () => void): boolean;
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
  const kinds = new KindSlots(p.kindConcurrency ?? {});
  while (!signal.aborted) {
    let n = await slots.free(signal);
    if (signal.aborted) return;
    const ask = kinds.ask(p.request, n);
    if (!ask) { // every kind is saturated: poll again once one has room
      await kinds.freed.wait(signal);
      continue;
    }
    let jobs: ActivatedJob[];
    try {
      // A batch kind left out (saturated) is left out of batchKinds too: each must be one of kinds.
      const batchKinds = p.request.batchKinds.filter((b) => ask.kinds.includes(b.kind));
      jobs = (await p.api.activate({ ...p.request, ...ask, batchKinds }, { signal })).jobs;
    } catch (err) {
      if (signal.aborted) return;
      const he = toHopperError(err);
      if (isRefusal(he) || he.code === Code.InvalidArgument) {
        p.refused(he); // asking again cannot help: the worker's own requests are refused
        return;
      }
      await sleep(p.backoff.fail(he.message), signal);
      continue;
    }
    p.backoff.succeed();
    // A batch (the poll cut it to the free slots) takes a slot per job, held until its
    // handler returns.
    for (const unit of grouped(jobs)) {
      for (const j of unit) {
        slots.take();
        kinds.take(j.kind);
      }
      const give = once(() => {
        for (const j of unit) {
          kinds.give(j.kind);
          slots.give();
        }
      });
      if (!p.launch(unit, give)) {
        give();
        for (const j of unit) void p.release(j, "worker stopping");
      }
    }
  }
}

/**
 * How long a poll that leaves out a saturated kind waits at most: the kind's jobs are asked for
 * again that soon after one of its jobs ends (the Go worker's rule).
 */
const saturatedPollWait = 500;

/**
 * KindSlots counts the running handlers of the capped kinds. A poll leaves out the saturated
 * kinds, so their jobs stay queued for other workers, and asks for no more jobs than the
 * capped kinds it names have room for: no job is claimed that could not run. In stream mode,
 * where the server applies the caps to what it pushes, the worker counts its handlers with
 * one too, as a second guard (Worker.admit).
 */
export class KindSlots {
  private readonly held = new Map<string, number>();
  readonly freed = new Notifier();

  constructor(private readonly caps: Record<string, number>) {}

  /** ask is the kinds, maxJobs and wait of the next poll for up to n jobs; undefined when every kind is saturated. */
  ask(request: ActivateRequest, n: number): Pick<ActivateRequest, "kinds" | "maxJobs" | "requestTimeout"> | undefined {
    const kinds: string[] = [];
    let saturated = false;
    for (const kind of request.kinds) {
      const cap = this.caps[kind];
      if (cap === undefined) {
        kinds.push(kind);
        continue;
      }
      const room = cap - (this.held.get(kind) ?? 0);
      if (room <= 0) {
        saturated = true;
        continue;
      }
      kinds.push(kind);
      n = Math.min(n, room);
    }
    if (saturated && kinds.length === 0) return undefined;
    let requestTimeout = request.requestTimeout;
    if (saturated && requestTimeout && fromDuration(requestTimeout)! > saturatedPollWait) requestTimeout = toDuration(saturatedPollWait);
    return { kinds, maxJobs: n, requestTimeout };
  }

  /** room reports whether a job of kind may start: kind is not capped, or has room. */
  room(kind: string): boolean {
    const cap = this.caps[kind];
    return cap === undefined || (this.held.get(kind) ?? 0) < cap;
  }

  take(kind: string): void {
    if (this.caps[kind] !== undefined) this.held.set(kind, (this.held.get(kind) ?? 0) + 1);
  }

  give(kind: string): void {
    if (this.caps[kind] === undefined) return;
    this.held.set(kind, (this.held.get(kind) ?? 1) - 1);
    this.freed.notify();
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
