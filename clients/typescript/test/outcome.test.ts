// How an ended attempt is reported: the worker says how it ended, the server decides what
// follows. The rules of the Go remote worker, without a server.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import {
  BusinessError, failWithCheckpoint,
  JobTimeoutError, LeaseLostError, NoRetryError, RetryAfterError, ShutdownError, SnoozeError, SuspendError,
} from "../src/index.js";
import { attemptTimeout } from "../src/execute.js";
import { ActivatedJobSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import { boundDelay, boundUntil, decide } from "../src/outcome.js";
import type { Decision, Ending, Outcome } from "../src/outcome.js";
import { formatMs } from "../src/time.js";
import { testLimits } from "./support/limits.js";

const job = { id: "j1", leaseToken: 7n };
const ending = (e: Partial<Ending>): Ending => ({ job, threw: false, mode: "stream", limits: testLimits, ...e });
const year = 365 * 24 * 3600_000;

/** outcomeOf is the outcome d reports; it fails the test when d reports none. */
function outcomeOf(d: Decision): Outcome {
  assert.equal(d.action, "report");
  return (d as { outcome: Outcome }).outcome;
}

describe("decide", () => {
  test("a returned value completes the job with it as JSON, whatever else aborted the signal", () => {
    for (const cause of [undefined, new ShutdownError(), new JobTimeoutError(1000)]) {
      assert.deepEqual(decide(ending({ result: { n: 1 }, cause })), { action: "report", outcome: { type: "complete", job, result: '{"n":1}' } });
    }
    assert.deepEqual(decide(ending({ result: undefined })), { action: "report", outcome: { type: "complete", job, result: "" } });
  });

  test("a result that is not JSON fails the attempt", () => {
    const o = outcomeOf(decide(ending({ result: { n: 1n } })));
    assert.ok(o.type === "fail" && o.outcome === "error" && o.error.startsWith("encode result: "), JSON.stringify(o, (_, v) => String(v)));
  });

  test("a thrown error is an error outcome, its stack apart; the server decides the retry", () => {
    const err = new Error("boom");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: err }))), { type: "fail", job, outcome: "error", error: "boom", stack: err.stack });
    const custom = new (class PaymentError extends Error { override name = "PaymentError"; })("declined");
    assert.equal((outcomeOf(decide(ending({ threw: true, error: custom }))) as { error: string }).error, "PaymentError: declined");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: "just a string" }))), { type: "fail", job, outcome: "error", error: "just a string" });
  });

  test("what JavaScript throws for a bug is a panic", () => {
    let err: unknown;
    try {
      (undefined as unknown as { x: number }).x;
    } catch (e) {
      err = e;
    }
    const o = outcomeOf(decide(ending({ threw: true, error: err })));
    assert.ok(o.type === "fail");
    assert.equal(o.outcome, "panic");
    assert.match(o.error, /^TypeError: Cannot read properties of undefined/);
    assert.match(o.stack!, /^TypeError: .*\n +at /);
    const overflow = new RangeError("Maximum call stack size exceeded");
    assert.equal((outcomeOf(decide(ending({ threw: true, error: overflow }))) as { outcome: string }).outcome, "panic");
  });

  test("NoRetryError says no retry, RetryAfterError its wait; a kind's policy goes along", () => {
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: new NoRetryError("bad input") }))),
      { type: "fail", job, outcome: "error", error: "not retryable: bad input", noRetry: true }, "worded as the Go worker words it");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: new RetryAfterError(1500, "rate limited") }))),
      { type: "fail", job, outcome: "error", error: "retry after 1.5s: rate limited", retryBackoff: 1500 });
    const kindPolicy = { base: 100, multiplier: 3, jitter: -1 };
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: "x", kindPolicy }))),
      { type: "fail", job, outcome: "error", error: "x", retryPolicy: kindPolicy });
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: new RetryAfterError(10 * year), kindPolicy }))),
      { type: "fail", job, outcome: "error", error: "retry after 87600h0m0s", retryBackoff: 5 * year, retryPolicy: kindPolicy },
      "a wait within 5 years; the server ignores the policy beside it");
  });

  test("a BusinessError sends its code (the server never retries it); a bad code makes a plain error", () => {
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: new BusinessError("card_declined", "insufficient funds") }))),
      { type: "fail", job, outcome: "error", error: "card_declined: insufficient funds", errorCode: "card_declined" });
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: new BusinessError("out_of_stock") }))),
      { type: "fail", job, outcome: "error", error: "out_of_stock", errorCode: "out_of_stock" });
    // The Go worker's text for the same handler: `card declined (not a business error: invalid error_code: "card declined": …)`.
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: new BusinessError("card declined") }))),
      { type: "fail", job, outcome: "error",
        error: `card declined (not a business error: invalid error_code: "card declined": only letters, digits, '_', '-', '.' and ':' are allowed)` });
    const long = "c".repeat(129);
    const o = outcomeOf(decide(ending({ threw: true, error: new BusinessError(long) })));
    assert.ok(o.type === "fail" && o.errorCode === undefined && o.error.endsWith("must be 1–128 characters)"), o.type === "fail" ? o.error : "");
  });

  test("failWithCheckpoint fails as its error would and carries the checkpoint as JSON", () => {
    const err = new Error("part 4 failed");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: failWithCheckpoint(err, { done: 3 }) }))),
      { type: "fail", job, outcome: "error", error: "part 4 failed", stack: err.stack, checkpoint: '{"done":3}' });
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: failWithCheckpoint(new BusinessError("out_of_stock"), [1, 2]) }))),
      { type: "fail", job, outcome: "error", error: "out_of_stock", errorCode: "out_of_stock", checkpoint: "[1,2]" },
      "a business error with a checkpoint: the failed job keeps it");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: failWithCheckpoint(new NoRetryError("bad"), null) }))),
      { type: "fail", job, outcome: "error", error: "not retryable: bad", noRetry: true, checkpoint: "null" });
    const dropped = outcomeOf(decide(ending({ threw: true, error: failWithCheckpoint("x", { n: 1n }) })));
    assert.ok(dropped.type === "fail" && dropped.checkpoint === undefined && dropped.error.startsWith("x (checkpoint dropped: encode checkpoint: "));
  });

  test("a timeout says so, as the Go worker does, before the handler's error", () => {
    const timeout = new JobTimeoutError(5000);
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: "gave up", cause: timeout }))),
      { type: "fail", job, outcome: "timeout", error: "job execution timeout after 5s: gave up" });
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: timeout, cause: timeout }))),
      { type: "fail", job, outcome: "timeout", error: "job execution timeout after 5s" }, "the signal's reason thrown back");
    const e = new Error("stopped");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: e, cause: new JobTimeoutError(90_000) }))),
      { type: "fail", job, outcome: "timeout", error: "job execution timeout after 1m30s: stopped", stack: e.stack });
  });

  test("snooze and suspend end the attempt without using it, even on the way out", () => {
    assert.deepEqual(decide(ending({ threw: true, error: new SnoozeError(100), cause: new ShutdownError() })),
      { action: "report", outcome: { type: "snooze", job, delay: 100 } });
    const now = new Date("2026-01-01T00:00:00Z");
    const d = decide(ending({ threw: true, error: new SuspendError({ checkpoint: { step: 3 }, until: new Date("2020-01-01") }) }), now);
    assert.deepEqual(d, { action: "report", outcome: { type: "suspend", job, checkpoint: '{"step":3}', until: now, deadline: undefined } });
  });

  test("once the lease is lost nothing counts; a stopping worker gives the job back", () => {
    for (const result of [{ threw: false, result: 1 }, { threw: true, error: new Error("stopped") }]) {
      assert.deepEqual(decide(ending({ ...result, cause: new LeaseLostError() })),
        { action: "report", outcome: { type: "release", job, reason: "lease lost" } }, "a stream's credit is freed");
      assert.deepEqual(decide(ending({ ...result, cause: new LeaseLostError(), mode: "poll" })), { action: "none" });
    }
    assert.deepEqual(decide(ending({ threw: true, error: new Error("stopped"), cause: new ShutdownError() })), { action: "decline" });
    const poll = decide(ending({ threw: true, error: new NoRetryError("stopped"), cause: new ShutdownError(), mode: "poll" }));
    assert.deepEqual(poll, { action: "report", outcome: { type: "release", job, reason: "released on shutdown: stopped" } });
  });

  test("error text fits the server: no NUL, at most 64 KiB, never empty", () => {
    const o = outcomeOf(decide(ending({ threw: true, error: new NoRetryError("a\0b".padEnd(100_000, "é")) })));
    assert.ok(o.type === "fail" && Buffer.byteLength(o.error) <= 64 << 10);
    assert.ok(o.error.startsWith("not retryable: a\uFFFDb") && o.error.endsWith("…"));
    const empty = outcomeOf(decide(ending({ threw: true, error: "" })));
    assert.deepEqual(empty, { type: "fail", job, outcome: "error", error: "string with an empty message" });
    const noMessage = outcomeOf(decide(ending({ threw: true, error: new NoRetryError("") })));
    assert.ok(noMessage.type === "fail" && noMessage.error === "NoRetryError with an empty message");
  });

  test("delays and times stay within what the server takes", () => {
    assert.equal(boundDelay(-5, testLimits), 0);
    assert.equal(boundDelay(100 * year, testLimits), 5 * year);
    assert.equal(boundDelay(Number.NaN, testLimits), 0);
    const now = new Date("2026-01-01T00:00:00Z");
    assert.equal(boundUntil(new Date("2500-01-01"), now, testLimits).getTime(), now.getTime() + 5 * year - 3600_000);
  });
});

describe("attemptTimeout", () => {
  const activated = (timeout?: number, defaultTimeout?: number) =>
    create(ActivatedJobSchema, { timeout: timeout === undefined ? undefined : durationFromMs(timeout), defaultTimeout: defaultTimeout === undefined ? undefined : durationFromMs(defaultTimeout) });
  const kind = { handle: () => {}, timeout: 2000 };
  test("the job's own timeout wins over the kind's, and the kind's over the server's default", () => {
    assert.equal(attemptTimeout(activated(1000, 3000), kind), 1000);
    assert.equal(attemptTimeout(activated(undefined, 3000), kind), 2000);
    assert.equal(attemptTimeout(activated(undefined, 3000), { handle: () => {} }), 3000);
    assert.equal(attemptTimeout(activated(0, 0), { handle: () => {} }), undefined, "0: none");
  });
});

describe("formatMs", () => {
  test("prints durations as Go does", () => {
    assert.deepEqual([0, 0.5, 200, 1000, 1500, 90_000, 3_600_000, 5400_500].map(formatMs),
      ["0s", "500µs", "200ms", "1s", "1.5s", "1m30s", "1h0m0s", "1h30m0.5s"]);
  });
});
