// Stream mode: the server pushes jobs into a stream, never more unfinished than the credit.
// The jobs are the worker's once pushed: when the stream ends (the server restarted, the
// network broke) their handlers run on, the worker keeps renewing their leases and reports
// their outcomes over a new connection while their tokens are current. Only a lost lease or a
// stop ends a handler.

import { Code } from "@connectrpc/connect";
import type { Client as RpcClient } from "@connectrpc/connect";
import type { Tracker } from "./backoff.js";
import { type HopperError, isRefusal, toHopperError } from "./errors.js";
import type { ActivatedJob, StreamJobsRequest, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { grouped } from "./batch.js";
import { sleep } from "./sleep.js";
import { formatMs, fromDuration } from "./time.js";

/** StreamIntake is what the stream loop needs from its worker. */
export interface StreamIntake {
  api: RpcClient<typeof WorkerService>;
  request: StreamJobsRequest;
  backoff: Tracker;
  /** launch runs jobs, a job or a batch's (ActivatedJob.batchId); false when the worker is stopping. */
  launch(jobs: ActivatedJob[]): boolean;
  /** decline keeps a job pushed to a stopping worker, to release once the stream is closed. */
  decline(job: ActivatedJob): void;
  /** refused stops the worker taking jobs: the server refused its API key. */
  refused(err: HopperError): void;
}

/**
 * How long a stream must stay open, without a message, to count as working. It is long: a
 * stream that a server or a proxy accepts and drops soon after is not working, and counted as
 * working it would log a recovery and a failure every cycle and never back off.
 */
const streamWorked = 10_000;

/**
 * streamLoop keeps a job stream open until signal aborts, reopening it with backoff when it
 * ends. A stream that worked (it delivered a message, or stayed open for 10 s) resets the
 * backoff, so a worker that lives through a server restart reconnects at once.
 */
export async function streamLoop(s: StreamIntake, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    let err: unknown = new Error("the server ended the stream");
    try {
      await stream(s, signal);
    } catch (e) {
      err = e;
    }
    if (signal.aborted) return;
    const he = toHopperError(err);
    if (isRefusal(he) || he.code === Code.InvalidArgument) {
      s.refused(he); // asking again cannot help
      return;
    }
    await sleep(s.backoff.fail(he.message), signal);
  }
}

/** How many keepalive periods of silence make a stream dead. */
const silentKeepalives = 3;

/**
 * Silence ends a stream once nothing came on it for three periods of the keepalive the server
 * announced (StreamJobsResponse.keepalive, hopper serve --stream-keepalive): a proxy or the
 * network dropped it without a word. It watches nothing until the server announces a period
 * (an older server, or keepalives turned off).
 */
class Silence {
  private period = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  readonly dead = new AbortController();

  /** heard notes a message; announced is its keepalive period in ms, if it carries one. */
  heard(announced: number | undefined): void {
    if (announced) this.period = announced;
    clearTimeout(this.timer);
    if (this.period <= 0) return;
    const limit = silentKeepalives * this.period;
    this.timer = setTimeout(() => {
      this.dead.abort(new Error(`job stream silent: no message from the server for ${formatMs(limit)} (${silentKeepalives} keepalive periods); reconnecting`));
    }, limit);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

async function stream(s: StreamIntake, signal: AbortSignal): Promise<void> {
  let worked = false;
  const succeed = () => {
    worked = true;
    s.backoff.succeed();
  };
  const timer = setTimeout(succeed, streamWorked);
  const silence = new Silence();
  const ended = new AbortController(); // the worker's signal, or a silent stream
  const end = () => ended.abort(signal.reason);
  signal.addEventListener("abort", end, { once: true });
  silence.dead.signal.addEventListener("abort", () => ended.abort(silence.dead.signal.reason), { once: true });
  try {
    for await (const msg of s.api.streamJobs(s.request, { signal: ended.signal })) {
      silence.heard(fromDuration(msg.keepalive));
      if (!worked && msg.jobs.length > 0) { // a keepalive alone does not show that it works
        clearTimeout(timer);
        succeed();
      }
      for (const jobs of grouped(msg.jobs)) { // a batch comes in one message: its parts pushed apart are batches of their own
        if (!s.launch(jobs)) jobs.forEach((j) => s.decline(j)); // pushed while stopping
      }
    }
  } catch (e) {
    if (silence.dead.signal.aborted && !signal.aborted) throw silence.dead.signal.reason;
    throw e;
  } finally {
    clearTimeout(timer);
    silence.stop();
    signal.removeEventListener("abort", end);
  }
}
