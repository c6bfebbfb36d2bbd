// A server that crashes mid-run and comes back: the worker reconnects, its handlers run on,
// and no job is lost or run twice.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client } from "../src/index.js";
import type { Logger, RunningJob } from "../src/index.js";
import { eventually, gate, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

/** logs keeps what a worker logs, as "level message" lines. */
function logs(): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const at = (level: string) => (message: string) => lines.push(`${level} ${message}`);
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

describe("a server crash", { concurrency: true }, () => {
  for (const mode of ["stream", "poll"] as const) {
    describe(`${mode} mode`, { concurrency: false }, () => {
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

    test("running handlers keep running across a crash and restart; their outcomes are kept, one attempt each", async (t) => {
      const s = server();
      const c = new Client({ url: s.url });
      const queue = queueName(`crash-${mode}`);
      const runs = new Map<string, number>();
      const started = gate();
      const finish = [gate(), gate()];
      const reasons: unknown[] = [];
      startWorker(s, {
        queue, mode, concurrency: 2, leaseDuration: 6000, handlers: {
          slow: async (job: RunningJob<{ i: number }>) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
            if (runs.size === 2) started.open();
            await finish[job.args.i]!.wait;
            if (job.signal.aborted) reasons.push(job.signal.reason);
            return `done ${job.args.i}`;
          },
        },
      }, (fn) => t.after(fn));
      const jobs = await c.enqueueMany([0, 1].map((i) => ({ kind: "slow", args: { i }, queue })));
      await started.wait;
      await s.kill();
      finish[0]!.open(); // finishes while the server is down: its report waits for one
      await new Promise((r) => setTimeout(r, 1000));
      await s.restart();
      const restarted = Date.now();
      const renewed = async () => (await c.get(jobs[1]!.job.id)).leaseExpiresAt!.getTime() > restarted + 5000;
      await eventually(renewed, "the lease to be renewed over a new connection", 5000);
      finish[1]!.open();
      for (const [i, r] of jobs.entries()) {
        const done = await waitForState(c, r.job.id, "completed", 20_000);
        assert.deepEqual([done.result, done.attempt, done.rescues], [`done ${i}`, 1, 0], `job ${i}`);
        const { attempts } = await c.events(r.job.id);
        assert.deepEqual(attempts.map((a) => a.outcome), ["ok"], `job ${i}: one attempt`);
      }
      assert.deepEqual([...runs.values()], [1, 1], "each handler ran once");
      assert.deepEqual(reasons, [], "no handler was told to stop");
    });

    // Issue 31, item 7: a handler awaiting progress and heartbeats in a loop, every 200 ms,
    // while the server is killed and restarted twice. Its calls during an outage do not
    // throw; the latest progress is kept and sent when the server is back (the final one,
    // made while the server is down, before the outcome). The 20 s job is here as
    // long as the two outages take (each spans at least three of its reports, counted, not
    // timed): about 5 s.
    test("progress and heartbeats during two crashes are kept: one attempt, completed, final progress stored", async (t) => {
      const s = server();
      const c = new Client({ url: s.url });
      const queue = queueName(`progress-${mode}`);
      const finish = gate();
      let calls = 0;
      let finished = false;
      const thrown: unknown[] = [];
      startWorker(s, {
        queue, mode, leaseDuration: 6000, handlers: {
          long: async (job: RunningJob) => {
            let done = false;
            void finish.wait.then(() => { done = true; });
            for (let i = 1; !done; i++) {
              try {
                await job.progress(Math.min(i, 99), `step ${i}`);
                await job.heartbeat();
              } catch (err) {
                thrown.push(err);
              }
              calls++;
              await new Promise((r) => setTimeout(r, 200));
            }
            await job.progress(100, "done").catch((err: unknown) => thrown.push(err));
            finished = true;
            return "ok";
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("long", {}, { queue });
      await eventually(() => calls >= 3, "three reports before the first crash");
      for (const last of [false, true]) {
        await s.kill();
        const atKill = calls;
        await eventually(() => calls >= atKill + 3, "three reports while the server is down");
        if (last) {
          finish.open(); // the final progress is made while the server is down
          await eventually(() => finished, "the handler to return");
        }
        await s.restart();
        if (!last) {
          const atRestart = calls;
          await eventually(() => calls >= atRestart + 3, "three reports after the restart");
        }
      }
      const done = await waitForState(c, job.id, "completed", 20_000);
      assert.deepEqual(thrown, [], "no call threw into the handler");
      assert.deepEqual([done.attempt, done.rescues, done.progressPercent, done.progressMessage], [1, 0, 100, "done"]);
      const { attempts } = await c.events(job.id);
      assert.deepEqual(attempts.map((a) => a.outcome), ["ok"], "one attempt");
    });
  });
}
});
