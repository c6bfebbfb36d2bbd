import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { backoffDelay } from "./backoff.js";
import { toHopperError } from "./errors.js";
import type { HopperError } from "./errors.js";
import type { WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { policyToProto } from "./job.js";
import type { Outcome } from "./outcome.js";
import { sleep } from "./sleep.js";
import { toDuration, toTimestamp } from "./time.js";

/**
 * Reporter tells the server how attempts ended. It is the one place outcomes leave the
 * worker, so that reporting them in batches changes only this. report throws a HopperError
 * when the call fails.
 */
export interface Reporter {
  /** report sends outcome, giving up after timeoutMs. */
  report(outcome: Outcome, timeoutMs: number): Promise<void>;
}

/** rpcReporter reports each outcome with its own call. */
export function rpcReporter(api: RpcClient<typeof WorkerService>): Reporter {
  return {
    async report(o, timeoutMs) {
      const ref = { id: o.job.id, leaseToken: o.job.leaseToken };
      const opts = { timeoutMs };
      try {
        switch (o.type) {
          case "complete":
            await api.complete({ ...ref, result: o.result }, opts);
            return;
          case "fail":
            await api.fail({
              ...ref, outcome: o.outcome, error: o.error, stack: o.stack, noRetry: o.noRetry,
              retryBackoff: toDuration(o.retryBackoff), retryPolicy: policyToProto(o.retryPolicy),
            }, opts);
            return;
          case "snooze":
            await api.snooze({ ...ref, delay: toDuration(o.delay) }, opts);
            return;
          case "suspend":
            await api.suspend({ ...ref, checkpoint: o.checkpoint, until: toTimestamp(o.until), deadline: toTimestamp(o.deadline) }, opts);
            return;
          case "release":
            await api.release({ ...ref, reason: o.reason }, opts);
            return;
        }
      } catch (err) {
        throw toHopperError(err);
      }
    },
  };
}

/** The spacing of an outcome's tries: 50 ms doubling to 2 s, ±20 %. */
const reportRetry = { base: 50, multiplier: 2, cap: 2000, jitter: 0.2 };

/**
 * reportUntilVerdict reports outcome until the server gives a verdict: a lost report would
 * leave the job running on the server (a stream keeps renewing its lease) with nobody on it.
 * A verdict is success or an answer about the job itself: its lease is gone or it is unknown
 * (nothing left to say: it returns), or the report is refused (InvalidArgument,
 * PermissionDenied, Unauthenticated: it throws). An unavailable server, a connection lost
 * mid-call and other errors are retried with backoff until deadline (a time in ms since the
 * epoch); then it throws the last error.
 */
export async function reportUntilVerdict(reporter: Reporter, outcome: Outcome, deadline: number): Promise<void> {
  for (let n = 1; ; n++) {
    let err: HopperError;
    try {
      await reporter.report(outcome, Math.max(deadline - Date.now(), 1));
      return;
    } catch (e) {
      err = toHopperError(e);
    }
    switch (err.code) {
      case Code.FailedPrecondition:
      case Code.NotFound:
        return; // the job is no longer this attempt's
      case Code.InvalidArgument:
      case Code.PermissionDenied:
      case Code.Unauthenticated:
        throw err; // retrying cannot help
    }
    const wait = backoffDelay(reportRetry, n);
    if (Date.now() + wait >= deadline) throw err;
    await sleep(wait);
  }
}
