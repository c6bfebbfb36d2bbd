// A job stream on which the server says nothing for three of the keepalive periods it
// announced is dead: the worker reopens it. Timers are mocked: no test waits for real.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Client as RpcClient } from "@connectrpc/connect";
import { Tracker, workPolicy } from "../src/backoff.js";
import { StreamJobsRequestSchema, StreamJobsResponseSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import type { WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import type { Logger } from "../src/logger.js";
import { streamLoop } from "../src/stream-intake.js";

/** settle lets pending promises and I/O callbacks run (setImmediate is not mocked). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

/**
 * blackhole answers each stream with one keepalive announcing periodMs, then nothing, until
 * the worker aborts it; opened counts the streams.
 */
function blackhole(periodMs: number): { api: RpcClient<typeof WorkerService>; opened: () => number } {
  let opened = 0;
  const api = {
    streamJobs: (_req: unknown, opts: { signal: AbortSignal }) => (async function* () {
      opened++;
      yield create(StreamJobsResponseSchema, { keepalive: durationFromMs(periodMs) });
      await new Promise((_, reject) => opts.signal.addEventListener("abort", () => reject(opts.signal.reason), { once: true }));
    })(),
  } as unknown as RpcClient<typeof WorkerService>;
  return { api, opened: () => opened };
}

describe("stream keepalives", () => {
  test("a stream silent for three announced periods is reopened, not before", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
    const { api, opened } = blackhole(10_000); // the server's period, not a default of the worker's
    const warnings: string[] = [];
    const log: Logger = { debug() {}, info() {}, error() {}, warn: (m, a) => warnings.push(`${m} ${String(a?.err)}`) };
    const stop = new AbortController();
    const done = streamLoop({
      api, request: create(StreamJobsRequestSchema, {}), backoff: new Tracker("job stream", workPolicy, log),
      launch: () => false, decline: () => {}, refused: () => {},
    }, stop.signal);
    await settle();
    assert.equal(opened(), 1);
    t.mock.timers.tick(29_999);
    await settle();
    assert.equal(opened(), 1, "still open before three periods of silence");
    t.mock.timers.tick(1);
    await settle();
    t.mock.timers.tick(1_000); // the backoff
    await settle();
    assert.equal(opened(), 2, "reopened");
    assert.match(warnings[0] ?? "", /job stream silent: no message from the server for 30s \(3 keepalive periods\)/);
    stop.abort();
    await done;
  });
});
