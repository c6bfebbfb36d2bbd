// A server that crashes mid-run and comes back: the worker reconnects and no job is lost.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client } from "../src/index.js";
import type { Logger, RunningJob } from "../src/index.js";
import { eventually, queueName, serverFor, startWorker } from "./support/fixture.js";

/** logs keeps what a worker logs, as "level message" lines. */
function logs(): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const at = (level: string) => (message: string) => lines.push(`${level} ${message}`);
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

describe("a server crash", { concurrency: true }, () => {
  for (const mode of ["stream", "poll"] as const) {
    describe(`${mode} mode`, () => {
    const server = serverFor();

    test("the worker reconnects and finishes every job", async (t) => {
      const s = server();
      const c = new Client({ url: s.url });
      const queue = queueName(`outage-${mode}`);
      const total = 150;
      const handled = new Map<string, number>();
      const log = logs();
      startWorker(s, {
        queue, mode, concurrency: 5, leaseDuration: 2000, logger: log.logger, handlers: {
          work: async (job: RunningJob<{ i: number }>) => {
            handled.set(job.id, (handled.get(job.id) ?? 0) + 1);
            await new Promise((r) => setTimeout(r, 10));
            return job.args.i;
          },
        },
      }, (fn) => t.after(fn));
      const ids = (await c.enqueueMany(Array.from({ length: total }, (_, i) => ({ kind: "work", args: { i }, queue })))).map((r) => r.job.id);

      await eventually(() => handled.size >= 40, "40 jobs to be worked");
      await s.kill(); // SIGKILL: jobs in flight, reports in flight
      const atCrash = handled.size;
      await new Promise((r) => setTimeout(r, 700));
      await s.restart();

      const completed = async () => (await c.list({ queues: [queue], states: ["completed"], limit: 1000 })).jobs.length;
      await eventually(async () => (await completed()) === total, `all ${total} jobs to complete`, 45_000);
      assert.ok(atCrash < total, "the crash came mid-run");
      for (const [i, id] of ids.entries()) {
        const job = await c.get(id);
        assert.deepEqual([job.state, job.result], ["completed", i], `job ${i}`);
      }
      if (mode === "stream") {
        // The stream breaks, so the outage is logged once and so is the recovery. (A poll
        // worker may live through it with every slot busy reporting, and never poll.)
        assert.equal(log.lines.filter((l) => l === "warn job stream failed; retrying with backoff").length, 1, log.lines.join("\n"));
        assert.equal(log.lines.filter((l) => l === "info job stream recovered").length, 1, log.lines.join("\n"));
      }
    });
  });
}
});
