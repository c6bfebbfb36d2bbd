// The worker keeps its jobs' leases alive, in stream mode as in poll mode: an open stream
// keeps nothing alive on its own, so a worker that hangs loses its jobs within one lease.
// These are the rules of the Go worker's keeper (internal/lease): renewals every third of the
// shortest lease held, on a fixed beat; a lease a handler shortens wakes the keeper, so it
// never lapses between renewals; a failed renewal is retried with backoff, never later than
// the cadence.

import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import type { Tracker } from "./backoff.js";
import { HopperError, isRefusal, toHopperError } from "./errors.js";
import type { WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { LeaseLostError } from "./handler-errors.js";
import { Notifier } from "./notifier.js";
import { maxBatch, verdictError } from "./reporter.js";
import type { Attempt } from "./running-job.js";
import { sleep } from "./sleep.js";
import { toDuration } from "./time.js";

/** The shortest wait between renewals, whatever the leases. */
const minCadence = 1;

/** Leases is what the keeper needs from its worker. */
export interface Leases {
  api: RpcClient<typeof WorkerService>;
  /** lease is the worker's lease duration in ms: the longest cadence, with no job running. */
  lease: number;
  /** backoff spaces the retries of failed renewals and logs the outage once. */
  backoff: Tracker;
  /** running is the attempts whose leases to renew now. */
  running(): Iterable<Attempt>;
  /** refused hears that the server refused the worker's key: the keeper stops, no renewal can pass. */
  refused?(err: HopperError): void;
}

/** LeaseKeeper renews the leases of a worker's running attempts until run's signal aborts. */
export class LeaseKeeper {
  private readonly woken = new Notifier();

  constructor(private readonly l: Leases) {}

  /** shortened tells the keeper that a lease got shorter (a handler's extendLease), so its next renewal comes in time. */
  shortened(): void {
    this.woken.notify();
  }

  /** run renews until signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    let last = Date.now(); // the last beat
    let retryIn = 0; // after a failed renewal: the backoff
    while (!signal.aborted) {
      // A fixed beat, like a ticker: a slow renewal does not push the next one later; one
      // already due (the process stalled) runs at once.
      let next = Math.max(last + this.cadence(), Date.now());
      if (retryIn > 0) next = Date.now() + Math.min(retryIn, this.cadence());
      const at = await this.sleepUntil(next, last, signal);
      if (at === undefined) return;
      last = at;
      retryIn = 0;
      try {
        if ((await this.renewAll(signal)) > 0) this.l.backoff.succeed();
      } catch (e) {
        if (signal.aborted) return;
        const err = toHopperError(e);
        if (isRefusal(err)) {
          this.l.refused?.(err);
          return;
        }
        retryIn = this.l.backoff.fail(err.message);
      }
    }
  }

  /** cadence is a third of the shortest lease held. */
  private cadence(): number {
    return Math.max(this.shortest() / 3, minCadence);
  }

  private shortest(): number {
    let d = this.l.lease;
    for (const a of this.l.running()) d = Math.min(d, a.lease);
    return d;
  }

  /**
   * sleepUntil waits until next and returns it; a lease shortened meanwhile brings it forward
   * to a third of the new shortest lease after the last beat. It returns undefined when signal
   * aborts.
   */
  private async sleepUntil(next: number, last: number, signal: AbortSignal): Promise<number | undefined> {
    for (;;) {
      const stop = new AbortController();
      const abort = () => stop.abort();
      signal.addEventListener("abort", abort, { once: true });
      void this.woken.wait(stop.signal).then(abort);
      const slept = await sleep(next - Date.now(), stop.signal);
      signal.removeEventListener("abort", abort);
      stop.abort(); // the wake-up is not waited for any more
      if (slept) return next;
      if (signal.aborted) return undefined;
      next = Math.min(next, last + this.cadence());
    }
  }

  /**
   * renewAll renews the lease of every running attempt, each for its own duration, in Report
   * batches, and returns how many it asked for. A lease found lost aborts its handler with a
   * LeaseLostError. A request that fails (the server is unreachable) throws: the round ends.
   */
  async renewAll(signal: AbortSignal): Promise<number> {
    const running = [...this.l.running()];
    const timeoutMs = this.shortest(); // a renewal that takes longer than a lease is moot
    let asked = 0;
    for (let i = 0; i < running.length; i += maxBatch) {
      const batch = running.slice(i, i + maxBatch);
      const renewals = batch.map((a) => ({ id: a.job.id, leaseToken: a.job.leaseToken, duration: toDuration(a.lease) }));
      const res = await this.l.api.report({ renewals }, { signal, timeoutMs });
      if (res.renewals.length !== batch.length) throw new HopperError(Code.Internal, "extend leases: the server answered a different number of verdicts");
      asked += batch.length;
      for (const [j, a] of batch.entries()) {
        const code = verdictError(res.renewals[j]!)?.code;
        if (code === Code.FailedPrecondition || code === Code.NotFound) a.abort(new LeaseLostError());
      }
    }
    return asked;
  }
}
