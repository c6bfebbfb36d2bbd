// A stream-mode Worker with prefetch, against a real `hopper serve`: it holds jobs beyond its
// concurrency, runs no more than that at once, renews the waiting jobs' leases and gives back
// those still waiting when it stops.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, Worker } from "../src/index.js";
import type { RunningJob } from "../src/index.js";
import { eventually, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

/** Turnstile runs jobs until let go, one job per call of next, in the order they came. */
class Turnstile {
  readonly started: number[] = [];
  running = 0;
  most = 0;
  private waiters: (() => void)[] = [];

  handler = async (job: RunningJob<{ n: number }>) => {
    this.most = Math.max(this.most, ++this.running);
    this.started.push(job.args.n);
    try {
      // A stop that aborts the handler (a failed test's) ends it too.
      await new Promise<void>((resolve, reject) => {
        this.waiters.push(resolve);
        job.signal.addEventListener("abort", () => reject(job.signal.reason), { once: true });
      });
    } finally {
      this.running--;
    }
  };

  /** next lets the longest-running job end. */
  next(): void {
    this.waiters.shift()?.();
  }
}

describe("Worker with prefetch", { concurrency: true }, () => {
  const server = serverFor();

  /** enqueue enqueues jobs 1…n on queue, in that order, and returns their ids. */
  const enqueue = async (c: Client, queue: string, n: number) =>
    (await c.enqueueMany(Array.from({ length: n }, (_, i) => ({ kind: "turn", args: { n: i + 1 }, queue })))).map((r) => r.job.id);

  const countState = async (c: Client, ids: string[], state: string) =>
    (await Promise.all(ids.map((id) => c.get(id)))).filter((j) => j.state === state).length;

  test("holds concurrency + prefetch jobs, runs concurrency at once, the rest in push order", async (t) => {
    const queue = queueName("prefetch-order");
    const c = new Client({ url: server().url });
    const ids = await enqueue(c, queue, 7);
    const turn = new Turnstile();
    startWorker(server(), { queue, concurrency: 2, prefetch: 3, leaseDuration: 60_000, handlers: { turn: turn.handler } }, (fn) => t.after(fn));

    await eventually(() => turn.started.length === 2, "two jobs to start");
    await eventually(async () => (await countState(c, ids, "running")) === 5, "five jobs running: two run, three wait in the worker");
    assert.equal(await countState(c, ids, "queued"), 2);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(turn.started.length, 2, "no third job while both slots are busy");
    for (let want = 3; want <= 7; want++) {
      turn.next();
      await eventually(() => turn.started.length === want, `job ${want} to start`);
      assert.equal(turn.started.at(-1), want, "the job that waited longest takes the freed slot");
      // The freed credit brings the next job: wait until it is claimed before a slot frees
      // again. Two claims of one stream may be in flight at once, and jobs that come back in
      // two claims arrive in either order.
      const done = want - 2;
      const running = Math.min(5, ids.length - done);
      await eventually(
        async () => (await countState(c, ids, "completed")) === done && (await countState(c, ids, "running")) === running,
        `${done} jobs completed, the freed credit's job claimed`,
      );
    }
    turn.next();
    turn.next();
    for (const id of ids) assert.equal((await waitForState(c, id, "completed")).attempt, 1);
    assert.equal(turn.most, 2, "never more than concurrency at once");
  });

  test("renews the waiting jobs' leases, and a job canceled while it waits never starts", async (t) => {
    const queue = queueName("prefetch-lease");
    const c = new Client({ url: server().url });
    const ids = await enqueue(c, queue, 3);
    const turn = new Turnstile();
    startWorker(server(), { queue, concurrency: 1, prefetch: 2, leaseDuration: 1000, handlers: { turn: turn.handler } }, (fn) => t.after(fn));

    await eventually(async () => (await countState(c, ids, "running")) === 3, "three jobs running");
    const before = (await c.get(ids[2]!)).leaseExpiresAt!;
    await c.cancel(ids[1]!);
    await new Promise((r) => setTimeout(r, 2000));
    const after = await c.get(ids[2]!);
    assert.equal(after.state, "running");
    assert.ok(after.leaseExpiresAt!.getTime() > before.getTime() + 1000, `the waiting job's lease was renewed: ${before.toISOString()} → ${after.leaseExpiresAt!.toISOString()}`);

    turn.next();
    await eventually(() => turn.started.length === 2, "the next job to start");
    assert.deepEqual(turn.started, [1, 3], "the canceled job was skipped");
    turn.next();
    await waitForState(c, ids[2]!, "completed");
    assert.equal((await c.get(ids[1]!)).state, "canceled");
  });

  test("gives back the jobs still waiting when it stops", async () => {
    const queue = queueName("prefetch-stop");
    const c = new Client({ url: server().url });
    const ids = await enqueue(c, queue, 3);
    const turn = new Turnstile();
    const w = new Worker({ url: server().url, apiKey: server().apiKey, queue, concurrency: 1, prefetch: 2, leaseDuration: 60_000, handlers: { turn: turn.handler } });
    w.start();
    await eventually(async () => (await countState(c, ids, "running")) === 3, "three jobs running");
    const stopped = w.stop(AbortSignal.timeout(10_000));
    setTimeout(() => turn.next(), 50); // the running job ends; stop waits for it
    await stopped;
    assert.equal((await c.get(ids[0]!)).state, "completed");
    for (const id of ids.slice(1)) {
      const job = await waitForState(c, id, "queued");
      assert.equal(job.attempt, 0, "the attempt is given back");
    }
    assert.deepEqual(turn.started, [1], "nothing started after stop");
  });

  test("refuses a bad prefetch", () => {
    const base = { url: server().url, handlers: { turn: async () => {} } };
    assert.throws(() => new Worker({ ...base, prefetch: -1 }), /prefetch/);
    assert.throws(() => new Worker({ ...base, prefetch: 1.5 }), /prefetch/);
    assert.throws(() => new Worker({ ...base, prefetch: 1, mode: "poll" }), /prefetch/);
    assert.throws(() => new Worker({ ...base, concurrency: 900, prefetch: 101 }), /prefetch/);
    assert.doesNotThrow(() => new Worker({ ...base, concurrency: 900, prefetch: 100 }));
  });
});
