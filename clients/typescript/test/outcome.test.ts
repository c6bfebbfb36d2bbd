// How an ended attempt is reported: the rules of the Go remote worker, without a server.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  JobTimeoutError, LeaseLostError, NoRetryError, RetryAfterError, ShutdownError, SnoozeError, SuspendError,
} from "../src/index.js";
import { StreamClosedError } from "../src/handler-errors.js";
import { boundDelay, boundUntil, decide } from "../src/outcome.js";
import type { Decision, Ending, Outcome } from "../src/outcome.js";

const job = { id: "j1", leaseToken: 7n, attempt: 2 };
const ref = { id: "j1", leaseToken: 7n };
const ending = (e: Partial<Ending>): Ending => ({ job, threw: false, mode: "stream", ...e });
const year = 365 * 24 * 3600_000;

/** outcomeOf is the outcome d reports; it fails the test when d reports none. */
function outcomeOf(d: Decision): Outcome {
  assert.equal(d.action, "report");
  return (d as { outcome: Outcome }).outcome;
}

describe("decide", () => {
  test("a returned value completes the job with it as JSON, whatever aborted the signal", () => {
    for (const cause of [undefined, new ShutdownError(), new LeaseLostError(), new StreamClosedError()]) {
      assert.deepEqual(decide(ending({ result: { n: 1 }, cause })), { action: "report", outcome: { type: "complete", job: ref, result: '{"n":1}' } });
    }
    assert.deepEqual(decide(ending({ result: undefined })), { action: "report", outcome: { type: "complete", job: ref, result: "" } });
  });

  test("a result that is not JSON fails the attempt", () => {
    const o = outcomeOf(decide(ending({ result: { n: 1n } })));
    assert.ok(o.type === "fail" && o.error.includes("encode result"), o.type);
  });

  test("a thrown error fails the attempt with its stack; the job's backoff applies", () => {
    const err = new Error("boom");
    assert.deepEqual(outcomeOf(decide(ending({ threw: true, error: err }))), { type: "fail", job: ref, error: err.stack });
  });

  test("NoRetryError fails for good, RetryAfterError sets the wait, a kind's policy too", () => {
    const noRetry = decide(ending({ threw: true, error: new NoRetryError("bad input") }));
    assert.deepEqual(noRetry, { action: "report", outcome: { type: "fail", job: ref, error: "bad input", retries: 0 } });
    const after = decide(ending({ threw: true, error: new RetryAfterError(1500, "rate limited") }));
    assert.deepEqual(after, { action: "report", outcome: { type: "fail", job: ref, error: "rate limited", retryBackoff: 1500 } });
    const policy = decide(ending({ threw: true, error: "x", kindPolicy: { base: 100, multiplier: 3, jitter: -1 } }));
    assert.deepEqual(policy, { action: "report", outcome: { type: "fail", job: ref, error: "x", retryBackoff: 300 } });
    const jobFirst = decide(ending({ threw: true, error: "x", job: { ...job, retryPolicy: { base: 10 } }, kindPolicy: { base: 100, multiplier: 3, jitter: -1 } }));
    assert.deepEqual(outcomeOf(jobFirst), { type: "fail", job: ref, error: "x", retryBackoff: 30 });
  });

  test("a timeout says so before the handler's error", () => {
    const o = outcomeOf(decide(ending({ threw: true, error: "gave up", cause: new JobTimeoutError(2000) })));
    assert.deepEqual(o, { type: "fail", job: ref, error: "job execution timeout after 2s: gave up" });
  });

  test("snooze and suspend end the attempt without using it, even on the way out", () => {
    assert.deepEqual(decide(ending({ threw: true, error: new SnoozeError(100), cause: new ShutdownError() })),
      { action: "report", outcome: { type: "snooze", job: ref, delay: 100 } });
    const now = new Date("2026-01-01T00:00:00Z");
    const d = decide(ending({ threw: true, error: new SuspendError({ checkpoint: { step: 3 }, until: new Date("2020-01-01") }) }), now);
    assert.deepEqual(d, { action: "report", outcome: { type: "suspend", job: ref, checkpoint: '{"step":3}', until: now, deadline: undefined } });
  });

  test("an error after the job stopped being ours", () => {
    const err = new Error("stopped");
    assert.deepEqual(decide(ending({ threw: true, error: err, cause: new StreamClosedError() })),
      { action: "releaseOnce", outcome: { type: "release", job: ref, reason: "job stream closed" } });
    assert.deepEqual(decide(ending({ threw: true, error: err, cause: new LeaseLostError() })),
      { action: "report", outcome: { type: "release", job: ref, reason: "lease lost" } });
    assert.deepEqual(decide(ending({ threw: true, error: err, cause: new LeaseLostError(), mode: "poll" })), { action: "none" });
    assert.deepEqual(decide(ending({ threw: true, error: err, cause: new ShutdownError() })), { action: "decline" });
    const poll = decide(ending({ threw: true, error: new NoRetryError("stopped"), cause: new ShutdownError(), mode: "poll" }));
    assert.deepEqual(poll, { action: "report", outcome: { type: "release", job: ref, reason: "released on shutdown: stopped" } });
  });

  test("error text fits the server: no NUL, at most 64 KiB, never empty", () => {
    const o = outcomeOf(decide(ending({ threw: true, error: new NoRetryError("a\0b".padEnd(100_000, "é")) })));
    assert.ok(o.type === "fail" && Buffer.byteLength(o.error) <= 64 << 10);
    assert.ok(o.error.startsWith("a\uFFFDb") && o.error.endsWith("…"));
    const empty = outcomeOf(decide(ending({ threw: true, error: "" })));
    assert.deepEqual(empty, { type: "fail", job: ref, error: "string with an empty message" });
  });

  test("delays and times stay within what the server takes", () => {
    assert.equal(boundDelay(-5), 0);
    assert.equal(boundDelay(100 * year), 5 * year);
    assert.equal(boundDelay(Number.NaN), 0);
    const now = new Date("2026-01-01T00:00:00Z");
    assert.equal(boundUntil(new Date("2500-01-01"), now).getTime(), now.getTime() + 5 * year - 3600_000);
  });
});
