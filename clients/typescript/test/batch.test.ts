// Batch handlers against a real `hopper serve`, in both modes: a group's queued jobs come in
// one call, each job keeps its own outcome, and a throw fails every job as its own attempt.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, Code, NoRetryError, Worker } from "../src/index.js";
import type { Batch } from "../src/index.js";
import { eventually, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

for (const mode of ["stream", "poll"] as const) {
  describe(`batch handlers in ${mode} mode`, { concurrency: true }, () => {
    const server = serverFor();
    const client = () => new Client({ url: server().url });

    test("a group's queued jobs come in one call, each with its own outcome", async (t) => {
      const queue = queueName(`batch-${mode}`);
      const c = client();
      const res = await c.enqueueMany(Array.from({ length: 6 }, (_, i) => ({ kind: "index", args: { n: i }, queue, groupKey: "g1" })));
      const calls: number[][] = [];
      startWorker(server(), {
        queue, mode, concurrency: 8, batchHandlers: { // a batch is cut to the credit, or the slots, free
          index: {
            maxJobs: 10,
            handle: (b: Batch<{ n: number }>) => {
              calls.push(b.jobs.map((j) => j.args.n));
              for (const [i, j] of b.jobs.entries()) {
                if (j.args.n === 1) b.fail(i, new NoRetryError("bad doc"));
                if (j.args.n === 2) b.setResult(i, { indexed: j.id });
              }
            },
          },
        },
      }, (fn) => t.after(fn));
      const failed = await waitForState(c, res[1]!.job.id, "failed");
      assert.equal(failed.lastError, "not retryable: bad doc");
      const withResult = await waitForState(c, res[2]!.job.id, "completed");
      assert.deepEqual(withResult.result, { indexed: res[2]!.job.id });
      for (const i of [0, 3, 4, 5]) await waitForState(c, res[i]!.job.id, "completed");
      assert.deepEqual(calls, [[0, 1, 2, 3, 4, 5]], "one call for the group's six jobs, in the group's order");
      for (const r of res) {
        const { attempts } = await c.events(r.job.id);
        assert.equal(attempts.length, 1, `job ${r.job.id}: one attempt`);
      }
    });

    test("a throw fails every job of the batch, each as its own attempt", async (t) => {
      const queue = queueName(`batch-throw-${mode}`);
      const c = client();
      const res = await c.enqueueMany(Array.from({ length: 3 }, (_, i) => ({ kind: "index", args: { n: i }, queue, groupKey: "g", maxAttempts: 1 })));
      let calls = 0;
      startWorker(server(), {
        queue, mode, batchHandlers: {
          index: () => {
            calls++;
            throw new Error("bulk request failed");
          },
        },
      }, (fn) => t.after(fn));
      for (const r of res) {
        const job = await waitForState(c, r.job.id, "failed");
        assert.equal(job.lastError, "bulk request failed");
        const { attempts } = await c.events(r.job.id);
        assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome]), [[1, "error"]]);
      }
      assert.equal(calls, 1);
    });

    test("a maxJobs the server does not take stops the worker with the server's INVALID_ARGUMENT", async (t) => {
      const w = startWorker(server(), { queue: queueName(`batch-bad-${mode}`), mode, batchHandlers: { index: { handle: () => {}, maxJobs: 1_000_000 } } }, (fn) => t.after(fn));
      await eventually(() => w.error !== undefined, "the worker to stop");
      assert.equal(w.error!.code, Code.InvalidArgument);
      assert.match(w.error!.message, /batch_kinds\[0\]\.max_jobs/);
    });
  });
}

describe("batchHandlers options", () => {
  test("a kind is in handlers or batchHandlers, not both; maxJobs and maxWait are checked", () => {
    const url = "http://127.0.0.1:1";
    assert.throws(() => new Worker({ url, handlers: { a: () => {} }, batchHandlers: { a: () => {} } }), /batchHandlers\["a"\]: the kind has a handler in handlers too/);
    assert.throws(() => new Worker({ url, batchHandlers: { a: { handle: () => {}, maxJobs: 1.5 } } }), /batchHandlers\["a"\]\.maxJobs 1.5/);
    assert.throws(() => new Worker({ url, batchHandlers: { a: { handle: () => {}, maxWait: -1 } } }), /batchHandlers\["a"\]\.maxWait -1/);
    assert.doesNotThrow(() => new Worker({ url, batchHandlers: { a: () => {} }, kindConcurrency: { a: 1 } }));
  });
});
