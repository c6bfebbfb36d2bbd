// Leases are the worker's, in both modes: it renews them itself, a handler may shorten its
// own, and a worker that stops renewing (hung, stopped) loses its jobs within one lease even
// with its stream open.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createClient } from "@connectrpc/connect";
import { Client, createTransport } from "../src/index.js";
import type { RunningJob } from "../src/index.js";
import { WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import { toDuration } from "../src/time.js";
import { eventually, gate, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("leases", { concurrency: true }, () => {
  const server = serverFor();

  for (const mode of ["stream", "poll"] as const) {
    test(`a handler that shortens its lease keeps the job, ${mode} mode`, async (t) => {
      const c = new Client({ url: server().url });
      const queue = queueName(`shorten-${mode}`);
      const started = gate();
      const finish = gate();
      startWorker(server(), {
        queue, mode, leaseDuration: 30_000, handlers: {
          long: async (job: RunningJob) => {
            await job.extendLease(1200);
            started.open();
            await finish.wait;
            return "done";
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("long", {}, { queue });
      await started.wait;
      await new Promise((r) => setTimeout(r, 3000)); // two and a half shortened leases
      const running = await c.get(job.id);
      const left = running.leaseExpiresAt!.getTime() - Date.now();
      assert.ok(left > 0, `the lease lapsed ${-left} ms ago`);
      assert.ok(left <= 1300, `renewed for ${left} ms, not the shortened 1.2 s`);
      finish.open();
      const done = await waitForState(c, job.id, "completed");
      assert.deepEqual([done.attempt, done.rescues, done.result], [1, 0, "done"]);
    });
  }

  test("a stream that stays open keeps no lease alive: a worker that never renews loses its job", async (t) => {
    const c = new Client({ url: server().url });
    const queue = queueName("hung");
    const { job } = await c.enqueue("work", {}, { queue });
    // A hung worker: it holds its stream open and never renews.
    const hung = new AbortController();
    t.after(() => hung.abort());
    const api = createClient(WorkerService, createTransport({ url: server().url }));
    const stream = api.streamJobs({ worker: "hung", queue, kinds: ["work"], credit: 1, leaseTimeout: toDuration(1000) }, { signal: hung.signal })[Symbol.asyncIterator]();
    // The server's first message is a keepalive naming its period; the job comes next.
    let first = await stream.next();
    while (!first.done && first.value.jobs.length === 0) first = await stream.next();
    assert.equal(first.value?.jobs[0]?.id, job.id);
    const pushedAt = Date.now();
    await eventually(async () => (await c.get(job.id)).leaseExpiresAt!.getTime() < Date.now(), "the lease to lapse", 5000);
    assert.ok(Date.now() - pushedAt < 2000, `the lease lapsed ${Date.now() - pushedAt} ms after the push, not within one lease`);

    // The leader rescues it and a live worker gets it; what the hung one says then is refused.
    startWorker(server(), { queue, handlers: { work: () => "by the live worker" } }, (fn) => t.after(fn));
    const done = await waitForState(c, job.id, "completed", 30_000);
    assert.deepEqual([done.result, done.rescues], ["by the live worker", 1]);
    assert.equal((await c.events(job.id)).attempts[0]!.outcome, "lease_expired");
    const late = await api.report({ outcomes: [{ outcome: { case: "complete", value: { id: job.id, leaseToken: first.value!.jobs[0]!.leaseToken } } }] });
    assert.equal(late.outcomes[0]!.code, "failed_precondition");
  });
});
