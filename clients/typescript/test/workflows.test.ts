// The Client's workflow methods against a real `hopper serve` (docs/workflows.md#workflows), and
// a batch with a callback built on them (docs/workflows.md#batches-with-a-callback).

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { batchCallbackStep, batchJobStep, Client, Code, countBatch, HopperError, NoRetryError } from "../src/index.js";
import type { BatchCounts, RunningJob } from "../src/index.js";
import { queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("workflows", () => {
  const server = serverFor();

  test("enqueueWorkflow, getWorkflow, listWorkflows and cancelWorkflow", async () => {
    const c = new Client({ url: server().url, apiKey: server().apiKey });
    const queue = queueName("workflows");
    const name = `publish-${queue}`;
    const res = await c.enqueueWorkflow({ name, steps: [
      { name: "publish", kind: "publish", args: { album: 7 }, queue, after: ["resize"], onParentFailure: "run" },
      { name: "resize", kind: "resize", args: { size: 320 }, queue, timeout: 30_000 },
    ] });
    assert.equal(res.workflow.name, name);
    assert.equal(res.workflow.state, "running");
    assert.equal(res.workflow.steps, 2);
    assert.deepEqual(res.jobs.map((j) => j.step), ["publish", "resize"], "in the order of the steps");
    assert.deepEqual(res.jobs.map((j) => j.state), ["waiting", "queued"]);
    assert.ok(res.jobs.every((j) => j.workflowId === res.workflow.id));

    const d = await c.getWorkflow(res.workflow.id);
    assert.deepEqual(d.steps.map((s) => s.job.step), ["resize", "publish"], "parents first");
    assert.deepEqual(d.steps[1]!.after, ["resize"]);
    assert.deepEqual(d.workflow.stepStates, { queued: 1, waiting: 1 });

    const page = await c.listWorkflows({ name, states: ["running"] });
    assert.deepEqual(page.workflows.map((w) => w.id), [res.workflow.id]);
    assert.equal(page.nextCursor, "");

    const canceled = await c.cancelWorkflow(res.workflow.id, { reason: "album withdrawn" });
    assert.equal(canceled.workflow.state, "canceled");
    assert.equal(canceled.canceled.length, 2);
    const again = await c.cancelWorkflow(res.workflow.id).then(() => undefined, (e: unknown) => e);
    assert.ok(again instanceof HopperError && again.code === Code.FailedPrecondition);
    const missing = await c.getWorkflow("01a20000-0000-7000-8000-000000000000").then(() => undefined, (e: unknown) => e);
    assert.ok(missing instanceof HopperError && missing.code === Code.NotFound);
    const bad = await c.enqueueWorkflow({ name, steps: [{ name: "a", kind: "k", after: ["nope"] }] })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(bad instanceof HopperError && bad.code === Code.InvalidArgument);
    assert.match(bad.message, /steps\[0\]\.job\.after\[0\]/);
  });

  test("enqueueBatch: the callback runs once every job ended, and counts them", async (t) => {
    const c = new Client({ url: server().url, apiKey: server().apiKey });
    const queue = queueName("batch");
    let counted: BatchCounts<string> | undefined;
    startWorker(server(), {
      queue, handlers: {
        send: (job: RunningJob<{ to: string }>) => {
          if (job.args.to === "bounce") throw new NoRetryError("mailbox full");
          return `sent to ${job.args.to}`;
        },
        tally: async (job: RunningJob) => {
          counted = countBatch(await job.parentResults<string>());
          return { completed: counted.completed, failed: counted.failed };
        },
      },
    }, (fn) => t.after(fn));
    const res = await c.enqueueBatch({ name: "newsletter", callback: { kind: "tally", queue },
      jobs: ["ann", "bounce", "bob"].map((to) => ({ kind: "send", args: { to }, queue })) });
    assert.deepEqual(res.jobs.map((j) => j.step), [batchJobStep(0), batchJobStep(1), batchJobStep(2), batchCallbackStep]);
    const cb = res.jobs[3]!;
    assert.equal(cb.state, "waiting");
    const done = await waitForState(c, cb.id, "completed");
    assert.deepEqual(done.result, { completed: 2, failed: 1 });
    assert.equal(counted!.jobs, 3);
    assert.equal(counted!.results[0]!.result, "sent to ann");
    assert.equal(counted!.results[1]!.outcome, "failed");
    assert.equal((await c.getWorkflow(res.workflow.id)).workflow.state, "failed");

    await assert.rejects(c.enqueueBatch({ name: "b", jobs: [{ kind: "send" }], callback: { kind: "tally", onParentFailure: "skip" } }),
      /callback.onParentFailure/);
  });
});
