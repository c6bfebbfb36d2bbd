// kindConcurrency (issue 31, item 6): a worker, in either mode, runs at most that many jobs of
// a kind at once while its other slots run other kinds, and claims none it could not run.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Client, Worker } from "../src/index.js";
import { eventually, gate, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("kindConcurrency", () => {
  const server = serverFor();

  for (const mode of ["poll", "stream"] as const) {
    test(`bounds a kind in the worker while the other slots run other kinds (${mode} mode)`, async (t) => {
      const c = new Client({ url: server().url });
      const queue = queueName("kinds");
      const running = new Map<string, number>();
      const peak = new Map<string, number>();
      const release = gate();
      const work = async (kind: string) => {
        running.set(kind, (running.get(kind) ?? 0) + 1);
        peak.set(kind, Math.max(peak.get(kind) ?? 0, running.get(kind)!));
        await release.wait;
        running.set(kind, running.get(kind)! - 1);
      };
      startWorker(server(), {
        queue, mode, concurrency: 6, kindConcurrency: { heavy: 2 },
        handlers: { heavy: () => work("heavy"), light: () => work("light") },
      }, (fn) => t.after(fn));
      const jobs = await c.enqueueMany([
        ...Array.from({ length: 6 }, () => ({ kind: "heavy", args: {}, queue })),
        ...Array.from({ length: 4 }, () => ({ kind: "light", args: {}, queue })),
      ]);
      await eventually(() => running.get("heavy") === 2 && running.get("light") === 4, "2 heavy and 4 light jobs to run");
      const claimed = await c.list({ queues: [queue], states: ["running"], limit: 100 });
      assert.equal(claimed.jobs.filter((j) => j.kind === "heavy").length, 2, "no heavy job is claimed beyond the kind's room");
      release.open();
      for (const { job } of jobs) await waitForState(c, job.id, "completed");
      assert.equal(peak.get("heavy"), 2, "at most 2 heavy jobs at once");
    });
  }

  test("a worker in stream mode counts its handlers per kind too: a server that ignores the stream's caps pushes more, which wait", async (t) => {
    // The server ignores kindConcurrency as one older than the field does: an interceptor
    // strips it from the stream's request.
    const stripKindCaps: Interceptor = (next) => async (req) => {
      if (!req.stream || req.method.name !== "StreamJobs") return next(req);
      const messages = req.message;
      return next({ ...req, message: (async function* () {
        for await (const m of messages) yield { ...m, kindConcurrency: {} };
      })() });
    };
    const transport = createConnectTransport({ baseUrl: server().url, httpVersion: "2", useBinaryFormat: true, interceptors: [stripKindCaps] });
    const c = new Client({ url: server().url });
    const queue = queueName("kinds-guard");
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    const gates = { heavy: gate(), light: gate() };
    const work = async (kind: "heavy" | "light") => {
      running.set(kind, (running.get(kind) ?? 0) + 1);
      peak.set(kind, Math.max(peak.get(kind) ?? 0, running.get(kind)!));
      await gates[kind].wait;
      running.set(kind, running.get(kind)! - 1);
    };
    startWorker(server(), {
      queue, transport, concurrency: 7, kindConcurrency: { heavy: 2 },
      handlers: { heavy: () => work("heavy"), light: () => work("light") },
    }, (fn) => t.after(fn));
    const jobs = await c.enqueueMany([
      ...Array.from({ length: 6 }, () => ({ kind: "heavy", args: {}, queue })),
      { kind: "light", args: {}, queue },
    ]);
    await eventually(() => running.get("heavy") === 2 && running.get("light") === 1, "2 heavy jobs and the light one to run");
    await eventually(async () => (await c.list({ queues: [queue], states: ["running"], limit: 100 })).jobs.length === 7,
      "the server to push every job: it ignores the cap");
    gates.light.open();
    await waitForState(c, jobs[6]!.job.id, "completed");
    assert.equal(running.get("heavy"), 2, "the light job's end starts no heavy job: the kind has no room, though slots are free");
    gates.heavy.open();
    for (const { job } of jobs) await waitForState(c, job.id, "completed");
    assert.equal(peak.get("heavy"), 2, "at most 2 heavy jobs at once");
  });

  test("is refused for a kind without a handler, under 1 and, in stream mode, for more than 64 kinds", () => {
    const handlers: Record<string, () => undefined> = { heavy: () => undefined };
    const many: Record<string, number> = {};
    for (let i = 0; i <= 64; i++) {
      handlers[`k${i}`] = () => undefined;
      many[`k${i}`] = 1;
    }
    for (const [options, what] of [
      [{ mode: "poll", kindConcurrency: { other: 1 } }, /no handler/],
      [{ kindConcurrency: { other: 1 } }, /no handler/],
      [{ mode: "poll", kindConcurrency: { heavy: 0 } }, /at least 1/],
      [{ kindConcurrency: { heavy: 0 } }, /at least 1/],
      [{ kindConcurrency: many }, /at most 64/],
    ] as const) {
      assert.throws(() => new Worker({ url: server().url, handlers, ...options }), what);
    }
    assert.doesNotThrow(() => new Worker({ url: server().url, handlers, kindConcurrency: { heavy: 1 } }), "stream mode takes caps");
    assert.doesNotThrow(() => new Worker({ url: server().url, handlers, mode: "poll", kindConcurrency: many }), "a poll caps any number");
  });
});
