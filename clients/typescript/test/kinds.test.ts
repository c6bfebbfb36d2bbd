// kindConcurrency (issue 31, item 6): a worker in poll mode runs at most that many jobs of a
// kind at once while its other slots run other kinds, and claims none it could not run.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, Worker } from "../src/index.js";
import { eventually, gate, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("kindConcurrency", () => {
  const server = serverFor();

  test("bounds a kind in the worker while the other slots run other kinds", async (t) => {
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
      queue, mode: "poll", concurrency: 6, kindConcurrency: { heavy: 2 },
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

  test("is refused in stream mode, for a kind without a handler and under 1", () => {
    const handlers = { heavy: () => undefined };
    for (const [options, what] of [
      [{ kindConcurrency: { heavy: 1 } }, /poll mode/],
      [{ mode: "poll", kindConcurrency: { other: 1 } }, /no handler/],
      [{ mode: "poll", kindConcurrency: { heavy: 0 } }, /at least 1/],
    ] as const) {
      assert.throws(() => new Worker({ url: server().url, handlers, ...options }), what);
    }
  });
});
