// Results passed along (docs/workflows.md): a fan-in handler reads its parents' results with
// job.parentResults(), in both modes, with a call or from its job (fetchParentResults).

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { bearer, Client, NoRetryError } from "../src/index.js";
import type { RunningJob } from "../src/index.js";
import { queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

for (const mode of ["stream", "poll"] as const) {
  for (const fetchParentResults of [false, true]) {
    describe(`parentResults in ${mode} mode${fetchParentResults ? ", fetched with the job" : ""}`, () => {
      const server = serverFor();

      test("a fan-in sums what its fan-out left, in the order it named its parents, a failed one's error with them", async (t) => {
        const queue = queueName(`parents-${mode}-${fetchParentResults}`);
        const c = new Client({ url: server().url, apiKey: server().apiKey });
        let calls = 0;
        const counting: Interceptor = (next) => (req) => {
          if (req.method.name === "ParentResults") calls++;
          return next(req);
        };
        const interceptors = server().apiKey ? [bearer(server().apiKey!), counting] : [counting];
        const transport = createConnectTransport({ baseUrl: server().url, httpVersion: "1.1", useBinaryFormat: true, interceptors });
        startWorker(server(), {
          queue, mode, concurrency: 3, fetchParentResults, transport, handlers: {
            part: (job: RunningJob<{ n: number }>) => {
              if (job.args.n < 0) throw new NoRetryError("negative");
              return job.args.n;
            },
            sum: async (job: RunningJob) => {
              const parents = await job.parentResults<number>();
              let sum = 0;
              const failed: string[] = [];
              for (const p of parents) {
                if (p.outcome === "completed") sum += p.result!;
                else failed.push(`${p.outcome}: ${p.error}`);
                assert.equal(p.kind, "part");
                assert.equal(p.expired, false);
                assert.ok(p.finishedAt instanceof Date);
              }
              return { sum, order: parents.map((p) => p.id), failed };
            },
          },
        }, (fn) => t.after(fn));
        const parts = await c.enqueueMany([5, -1, 7].map((n) => ({ kind: "part", args: { n }, queue })));
        const ids = parts.map((r) => r.job.id);
        const [p5, pNeg, p7] = ids as [string, string, string];
        const named = [p7, p5, pNeg];
        const child = await c.enqueue("sum", {}, { queue, after: named, onParentFailure: "run" });
        const failed = await waitForState(c, pNeg, "failed");
        const done = await waitForState(c, child.job.id, "completed");
        assert.deepEqual(done.result, { sum: 12, order: named, failed: [`failed: ${failed.lastError}`] });
        assert.equal(calls, fetchParentResults ? 0 : 1, "ParentResults calls: none when they came with the job");
      });

      test("a job without parents has none", async (t) => {
        const queue = queueName(`no-parents-${mode}-${fetchParentResults}`);
        const c = new Client({ url: server().url, apiKey: server().apiKey });
        startWorker(server(), {
          queue, mode, fetchParentResults, handlers: { alone: async (job: RunningJob) => (await job.parentResults()).length },
        }, (fn) => t.after(fn));
        const res = await c.enqueue("alone", {}, { queue });
        assert.equal((await waitForState(c, res.job.id, "completed")).result, 0);
      });
    });
  }
}
