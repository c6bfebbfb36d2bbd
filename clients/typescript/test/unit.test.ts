// The small pieces: text that fits the server, backoff, errors.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConnectError } from "@connectrpc/connect";
import { backoffDelay } from "../src/backoff.js";
import { toHopperError } from "../src/errors.js";
import { Code, HopperError, Worker, codeName } from "../src/index.js";
import { clipText } from "../src/text.js";

describe("clipText", () => {
  test("keeps text that fits", () => assert.equal(clipText("héllo", 6), "héllo"));
  test("cuts at a character boundary and marks the cut", () => {
    assert.equal(clipText("ééé", 5), "é…"); // 2 + 3 bytes
    assert.equal(clipText("abcdef", 2), "ab");
  });
  test("replaces NUL and lone surrogates", () => assert.equal(clipText("a\0b\uD800", 100), "a\uFFFDb\uFFFD"));
});

describe("backoff", () => {
  const p = { base: 100, multiplier: 2, cap: 1000, jitter: 0 };
  test("grows and caps", () => assert.deepEqual([1, 2, 3, 4, 5, 50].map((n) => backoffDelay(p, n)), [100, 200, 400, 800, 1000, 1000]));
  test("jitter stays within bounds", () => {
    const j = { ...p, jitter: 0.2 };
    assert.equal(backoffDelay(j, 1, () => 0), 80);
    assert.equal(backoffDelay(j, 1, () => 1), 120);
  });
});

describe("HopperError", () => {
  test("names the field an INVALID_ARGUMENT names", () => {
    const e = new HopperError(Code.InvalidArgument, 'job 2: invalid idempotency_key: contains a NUL byte at byte 3');
    assert.equal(e.field, "idempotency_key");
    assert.equal(e.message, "[invalid_argument] job 2: invalid idempotency_key: contains a NUL byte at byte 3");
    assert.equal(new HopperError(Code.NotFound, "invalid x: y").field, undefined);
  });
  test("code names are Connect's", () => {
    assert.equal(codeName(Code.FailedPrecondition), "failed_precondition");
    assert.equal(codeName(Code.Unavailable), "unavailable");
  });
  test("a connection lost mid-call is unavailable", () => {
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    assert.equal(toHopperError(new ConnectError("aborted", Code.Aborted, undefined, undefined, reset)).code, Code.Unavailable);
    assert.equal(toHopperError(new ConnectError("protocol error: premature close", Code.Internal)).code, Code.Unavailable);
    assert.equal(toHopperError(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled)).code, Code.Unavailable);
    assert.equal(toHopperError(new ConnectError("internal error (request id X)", Code.Internal)).code, Code.Internal);
    assert.equal(toHopperError(new ConnectError("This operation was aborted", Code.Canceled)).code, Code.Canceled);
  });
});

describe("WorkerOptions", () => {
  const url = "http://127.0.0.1:1";
  test("a bad option is a TypeError naming it", () => {
    const bad = (handlers: ConstructorParameters<typeof Worker>[0]["handlers"], re: RegExp) =>
      assert.throws(() => new Worker({ url, handlers }), (e: Error) => e instanceof TypeError && re.test(e.message));
    bad({}, /handlers has no handler/);
    bad({ a: { handle: 1 as unknown as () => void } }, /handlers\["a"\] is not a function/);
    bad({ a: { handle: () => {}, timeout: -1 } }, /handlers\["a"\]\.timeout -1/);
    bad({ a: { handle: () => {}, retryPolicy: { multiplier: 0.5 } } }, /multiplier 0\.5 must be at least 1/);
    bad({ a: { handle: () => {}, retryPolicy: { jitter: 2 } } }, /jitter 2 must be at most 1/);
    assert.throws(() => new Worker({ url, handlers: { a: () => {} }, concurrency: 0 }), /concurrency 0 is outside 1–1000/);
    assert.throws(() => new Worker({ url, handlers: { a: () => {} }, queues: ["a", ""] }), /queues\[1\] is empty/);
    const many = Array.from({ length: 65 }, (_, i) => `q${i}`);
    assert.throws(() => new Worker({ url, handlers: { a: () => {} }, queues: many }), /queues: 65 queues, more than 64/);
    new Worker({ url, handlers: { a: () => {} }, queue: "q0", queues: many.slice(0, 64) }); // q0 counts once
    new Worker({ url, handlers: { a: { handle: () => {}, timeout: 100, retryPolicy: { base: 10, jitter: -1 } } } });
  });
});
