import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { backoffDelay } from "./backoff.js";
import { codeName, HopperError, toHopperError } from "./errors.js";
import { OutcomeSchema } from "./gen/hopper/v1/hopper_pb.js";
import type { Outcome as OutcomePb, ReportResponse, Verdict, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import { policyToProto } from "./job.js";
import type { Outcome } from "./outcome.js";
import { sleep } from "./sleep.js";
import { toDuration, toTimestamp } from "./time.js";

/**
 * Reporter tells the server how attempts ended. It is the one place outcomes leave the
 * worker. report resolves when the server took the outcome, and throws a HopperError with
 * what the single call (Complete, Fail…) would have answered otherwise: the item's verdict
 * (FailedPrecondition: the job is no longer this attempt's), or why the request failed as a
 * whole (Unavailable: the server is unreachable).
 */
export interface Reporter {
  /** report sends outcome, giving up once it has waited timeoutMs to be sent. */
  report(outcome: Outcome, timeoutMs: number): Promise<void>;
}

// Outcomes go to the server in batches (WorkerService.Report), each item still fenced by its
// own lease token and answered with its own verdict. There is no timer: the first outcome to
// find a free request slot sends what is waiting, and keeps sending while more arrived
// meanwhile; other outcomes wait for the batch they join. At a low rate every outcome goes out
// at once, alone; under load the batches grow by themselves while earlier requests are on the
// wire. These are the Go worker's rules (remote/batch.go).

/** The most outcomes in one request (the server takes 1,000 items). */
export const maxBatch = 500;
/** How many batch requests may be on the wire at once. */
const batchSlots = 2;
/** How long one batch request may take. */
const batchTimeout = 20_000;

interface Queued {
  outcome: OutcomePb;
  /** deadline is when the caller stops waiting (ms since the epoch): not sent after it. */
  deadline: number;
  resolve(): void;
  reject(err: HopperError): void;
}

/** Batcher is a Reporter that coalesces outcomes into Report requests to api. */
export class Batcher implements Reporter {
  private waiting: Queued[] = [];
  private sending = 0; // requests on the wire

  constructor(private readonly api: RpcClient<typeof WorkerService>) {}

  report(o: Outcome, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ outcome: outcomeMessage(o), deadline: Date.now() + timeoutMs, resolve, reject });
      if (this.sending < batchSlots) {
        this.sending++;
        void this.flush();
      }
    });
  }

  /** flush sends the waiting outcomes, batch after batch, until none is left, then frees its slot. */
  private async flush(): Promise<void> {
    for (;;) {
      const batch = this.take();
      if (batch.length === 0) {
        this.sending--;
        return;
      }
      await this.send(batch);
    }
  }

  /** take removes up to maxBatch waiting outcomes, failing those whose caller gave up. */
  private take(): Queued[] {
    const now = Date.now();
    const batch: Queued[] = [];
    let i = 0;
    for (; i < this.waiting.length && batch.length < maxBatch; i++) {
      const q = this.waiting[i]!;
      if (q.deadline < now) q.reject(new HopperError(Code.DeadlineExceeded, "report: gave up waiting to be sent"));
      else batch.push(q);
    }
    this.waiting = i === this.waiting.length ? [] : this.waiting.slice(i);
    return batch;
  }

  /** send sends one batch and hands each item its verdict. */
  private async send(batch: Queued[]): Promise<void> {
    let res: ReportResponse | undefined;
    let err: HopperError | undefined;
    try {
      res = await this.api.report({ outcomes: batch.map((q) => q.outcome) }, { timeoutMs: batchTimeout });
      if (res.outcomes.length !== batch.length) err = new HopperError(Code.Internal, "report: the server answered a different number of verdicts");
    } catch (e) {
      err = toHopperError(e);
    }
    for (const [i, q] of batch.entries()) {
      const e = err ?? verdictError(res!.outcomes[i]!);
      if (e) q.reject(e);
      else q.resolve();
    }
  }
}

/** verdictError is a verdict as the error the single call would have thrown; undefined for "ok". */
export function verdictError(v: Verdict): HopperError | undefined {
  if (v.code === "ok") return undefined;
  return new HopperError(codes.get(v.code) ?? Code.Unknown, v.message);
}

/** codes maps Connect's code names ("failed_precondition") to codes. */
const codes = new Map(
  Object.values(Code).filter((c): c is Code => typeof c === "number").map((c) => [codeName(c), c]),
);

/** outcomeMessage is o as an item of a Report. */
function outcomeMessage(o: Outcome): OutcomePb {
  const ref = { id: o.job.id, leaseToken: o.job.leaseToken };
  let init: MessageInitShape<typeof OutcomeSchema>["outcome"];
  switch (o.type) {
    case "complete":
      init = { case: "complete", value: { ...ref, result: o.result } };
      break;
    case "fail":
      init = {
        case: "fail", value: {
          ...ref, outcome: o.outcome, error: o.error, stack: o.stack, noRetry: o.noRetry,
          retryBackoff: toDuration(o.retryBackoff), retryPolicy: policyToProto(o.retryPolicy),
          checkpoint: o.checkpoint, errorCode: o.errorCode,
        },
      };
      break;
    case "snooze":
      init = { case: "snooze", value: { ...ref, delay: toDuration(o.delay) } };
      break;
    case "suspend":
      init = { case: "suspend", value: { ...ref, checkpoint: o.checkpoint, until: toTimestamp(o.until), deadline: toTimestamp(o.deadline) } };
      break;
    case "release":
      init = { case: "release", value: { ...ref, reason: o.reason } };
      break;
  }
  return create(OutcomeSchema, { outcome: init });
}

/** The spacing of an outcome's tries: 50 ms doubling to 2 s, ±20 %. */
const reportRetry = { base: 50, multiplier: 2, cap: 2000, jitter: 0.2 };

/**
 * reportUntilVerdict reports outcome until the server gives a verdict: a lost report would
 * leave the job running on the server (its lease renewed) with nobody on it. A verdict is
 * success or an answer about the job itself: its lease is gone or it is unknown (nothing left
 * to say: it returns), or the report is refused (InvalidArgument, PermissionDenied,
 * Unauthenticated: it throws). An unavailable server, a connection lost mid-call and other
 * errors are retried with backoff until deadline (a time in ms since the epoch); then it
 * throws the last error.
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
