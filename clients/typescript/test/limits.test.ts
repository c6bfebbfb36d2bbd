// Limits served, not copied (issue 34, item 2): the worker makes what it reports fit the input
// limits its server serves (ServerService.Info), not limits of its own.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { ServerServiceInfoResponse } from "../src/gen/hopper/v1/hopper_pb.js";
import { Client, NoLimitsError, SnoozeError } from "../src/index.js";
import { limitsOf } from "../src/text.js";
import { eventually, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("input limits", () => {
  const server = serverFor();

  test("limitsOf takes what a server serves, and throws a NoLimitsError naming what it leaves out", () => {
    const served = { maxErrorBytes: 100, maxReasonBytes: 50, maxProgressMessageBytes: 20, maxErrorCodeLen: 8, maxRunAtFuture: { seconds: 60n, nanos: 0 } };
    assert.deepEqual(limitsOf(served as never, "http://h"), { errorBytes: 100, reasonBytes: 50, progressMessageBytes: 20, errorCodeLen: 8, runAtFutureMs: 60_000 });
    assert.throws(() => limitsOf(undefined, "http://h"), (e: unknown) =>
      e instanceof NoLimitsError && e.limit === undefined && e.url === "http://h" && e.code === Code.Unimplemented &&
      e.rawMessage === "the server at http://h serves no input limits (ServerService.Info): upgrade it");
    for (const key of Object.keys(served)) {
      const name = key.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
      assert.throws(() => limitsOf({ ...served, [key]: key === "maxRunAtFuture" ? undefined : 0 } as never, "http://h"),
        (e: unknown) => e instanceof NoLimitsError && e.limit === name && e.message.includes(`serves no input limit ${name} `), name);
    }
  });

  for (const mode of ["poll", "stream"] as const) {
    test(`the worker clips its reports to the server's limits (${mode} mode)`, async (t) => {
      // The server says it takes 100 bytes of error text and 20 of progress message.
      let asked = 0;
      const small: Interceptor = (next) => async (req) => {
        const res = await next(req);
        if (!res.stream && req.method.name === "Info") {
          asked++;
          const info = (res.message as ServerServiceInfoResponse).server!;
          info.inputLimits!.maxErrorBytes = 100;
          info.inputLimits!.maxProgressMessageBytes = 20;
          info.inputLimits!.maxRunAtFuture = { $typeName: "google.protobuf.Duration", seconds: 48n * 3600n, nanos: 0 };
        }
        return res;
      };
      const transport = createConnectTransport({ baseUrl: server().url, httpVersion: "2", useBinaryFormat: true, interceptors: [small] });
      const c = new Client({ url: server().url });
      const queue = queueName("limits");
      startWorker(server(), {
        queue, mode, transport, handlers: {
          wordy: async (job) => {
            await job.progress(10, "p".repeat(300));
            throw new Error("é".repeat(300)); // 600 bytes
          },
          sleepy: async () => {
            throw new SnoozeError(100 * 365 * 24 * 3600_000);
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("wordy", {}, { queue, maxAttempts: 1 });
      const failed = await waitForState(c, job.id, "failed");
      assert.ok(Buffer.byteLength(failed.lastError) <= 100, `clipped to the served limit: ${Buffer.byteLength(failed.lastError)} bytes`);
      assert.ok(failed.lastError.endsWith("…"));
      assert.ok(Buffer.byteLength(failed.progressMessage) <= 20);

      // A snooze of a century is bounded by the served max_run_at_future (48 h).
      const before = Date.now();
      const snoozed = await waitForState(c, (await c.enqueue("sleepy", {}, { queue })).job.id, "scheduled");
      assert.ok(snoozed.runAt!.getTime() < before + 49 * 3600_000, `snoozed until ${snoozed.runAt!.toISOString()}: past the served limit`);
      assert.equal(asked, 1, "asked once, before taking jobs");
    });
  }

  // The worker takes its limits only from its server: one that serves none stops it before
  // it takes any job, with a NoLimitsError as worker.error, said once in the log.
  const withoutLimits: Record<string, Interceptor> = {
    "no inputLimits": (next) => async (req) => {
      const res = await next(req);
      if (!res.stream && req.method.name === "Info") (res.message as ServerServiceInfoResponse).server!.inputLimits = undefined;
      return res;
    },
    "a limit left 0": (next) => async (req) => {
      const res = await next(req);
      if (!res.stream && req.method.name === "Info") (res.message as ServerServiceInfoResponse).server!.inputLimits!.maxReasonBytes = 0;
      return res;
    },
    "no ServerService": (next) => async (req) => {
      if (req.method.name === "Info") throw new ConnectError("404 Not Found", Code.Unimplemented);
      return next(req);
    },
  };
  for (const [name, interceptor] of Object.entries(withoutLimits)) {
    for (const mode of ["poll", "stream"] as const) {
      test(`a server that serves no limits gets no job taken: ${name} (${mode} mode)`, async (t) => {
        const transport = createConnectTransport({ baseUrl: server().url, httpVersion: "2", useBinaryFormat: true, interceptors: [interceptor] });
        const c = new Client({ url: server().url });
        const queue = queueName("nolimits");
        const { job } = await c.enqueue("any", {}, { queue });
        let ran = 0;
        const lines: string[] = [];
        const logger = { debug() {}, info() {}, warn() {}, error: (msg: string) => { lines.push(msg); } };
        const w = startWorker(server(), { queue, mode, transport, logger, handlers: { any: async () => { ran++; } } }, (fn) => t.after(fn));
        await eventually(() => w.error !== undefined, "the worker to stop");
        const err = w.error;
        assert.ok(err instanceof NoLimitsError, String(err));
        assert.equal(err.url, server().url);
        assert.equal(err.limit, name === "a limit left 0" ? "max_reason_bytes" : undefined);
        assert.match(err.message, /the server at \S+ serves no input limits? ?\S* \(ServerService\.Info\): upgrade it/);
        assert.equal((await c.get(job.id)).state, "queued", "the job was not taken");
        assert.equal(ran, 0);
        assert.equal(lines.filter((l) => l.includes("serves no input limit")).length, 1, lines.join("\n"));
      });
    }
  }
});
