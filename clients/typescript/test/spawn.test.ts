// Fan-out at run time (docs/workflows.md): a handler adds jobs with job.spawn(), and the jobs
// that wait for it wait for those too.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, HopperError } from "../src/index.js";
import type { RunningJob } from "../src/index.js";
import { queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("spawn", () => {
  const server = serverFor();

  test("a split spawns parts it counts as it runs; the merge after it sums them; bad input names the field", async (t) => {
    const queue = queueName("spawn");
    const c = new Client({ url: server().url, apiKey: server().apiKey });
    const fields: (string | undefined)[] = [];
    startWorker(server(), {
      queue, concurrency: 3, handlers: {
        part: (job: RunningJob<{ n: number }>) => job.args.n,
        split: async (job: RunningJob<{ n: number }>) => {
          for (const bad of [
            [{ kind: "part", args: { n: 1 }, queue, step: "named" }], // not a step of a workflow: no step to name
            [{ kind: "part", args: { n: 1 }, queue }, { kind: "part", args: { n: 2 }, queue: "no spaces" }],
            [{ kind: "part", args: { n: 1 }, queue, afterSteps: ["nope"] }], // no earlier job is step "nope"
          ]) {
            try {
              await job.spawn(bad);
              fields.push("none");
            } catch (e) {
              fields.push(e instanceof HopperError ? e.field : String(e));
            }
          }
          const parts = Array.from({ length: job.args.n }, (_, i) => ({
            kind: "part", args: { n: i + 1 }, queue, idempotencyKey: `${job.id}-part-${i}`,
          }));
          const first = await job.spawn(parts);
          const again = await job.spawn(parts); // as a retried attempt would
          assert.deepEqual(again.map((r) => [r.job.id, r.existing]), first.map((r) => [r.job.id, true]));
          return 0;
        },
        merge: async (job: RunningJob) => {
          const parents = await job.parentResults<number>();
          return { sum: parents.reduce((s, p) => s + (p.result ?? 0), 0), parents: parents.length };
        },
      },
    }, (fn) => t.after(fn));
    const split = await c.enqueue("split", { n: 3 }, { queue });
    const merge = await c.enqueue("merge", {}, { queue, after: [split.job.id] });
    const done = await waitForState(c, merge.job.id, "completed");
    assert.deepEqual(done.result, { sum: 6, parents: 4 });
    assert.deepEqual(fields, ["jobs[0].step", "jobs[1].queue", "jobs[0].after_steps[0]"]);
  });
});
