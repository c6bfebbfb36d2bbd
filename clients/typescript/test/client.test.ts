// The Client against a real `hopper serve`, over every transport the SDK offers.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, Code, HopperError } from "../src/index.js";
import type { ConnectionOptions } from "../src/index.js";
import { queueName, serverFor } from "./support/fixture.js";

/** rejects asserts that p fails with a HopperError of code, and returns it. */
async function rejects(p: Promise<unknown>, code: Code): Promise<HopperError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof HopperError, `want a HopperError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  return err;
}

const transports: Record<string, Omit<ConnectionOptions, "url">> = {
  "connect over HTTP/2": {},
  "connect over HTTP/1.1": { httpVersion: "1.1" },
  gRPC: { protocol: "grpc" },
};

describe("Client", () => {
  const server = serverFor();

  for (const [name, options] of Object.entries(transports)) {
    test(`enqueue, get and errors, ${name}`, async () => {
      const c = new Client({ url: server().url, ...options });
      const queue = queueName(name);
      const runAt = new Date(Date.now() + 3600_000);
      const { job, existing } = await c.enqueue("send-email", { to: "a@example.com" }, {
        queue, priority: 3, runAt, maxAttempts: 4, timeout: 1500, headers: { trace: "t1" }, idempotencyKey: `k-${queue}`,
        groupKey: "g", retryPolicy: { base: 250, multiplier: 3, cap: 10_000, jitter: 0.5 }, maxRescues: 7,
        fairnessKey: "tenant-1",
      });
      assert.equal(existing, false);
      assert.deepEqual(
        { kind: job.kind, args: job.args, queue: job.queue, priority: job.priority, state: job.state, maxAttempts: job.maxAttempts,
          timeout: job.timeout, headers: job.headers, groupKey: job.groupKey, maxRescues: job.maxRescues, runAt: job.runAt?.getTime(),
          fairnessKey: job.fairnessKey },
        { kind: "send-email", args: { to: "a@example.com" }, queue, priority: 3, state: "scheduled", maxAttempts: 4, timeout: 1500,
          headers: { trace: "t1" }, groupKey: "g", maxRescues: 7, runAt: runAt.getTime(), fairnessKey: "tenant-1" },
      );
      const again = await c.enqueue("send-email", { to: "a@example.com" }, { queue, idempotencyKey: `k-${queue}` });
      assert.equal(again.existing, true);
      assert.equal(again.job.id, job.id);
      assert.deepEqual((await c.get(job.id)).args, { to: "a@example.com" });

      await rejects(c.enqueue("send-email", { to: "b@example.com" }, { queue, idempotencyKey: `k-${queue}` }), Code.AlreadyExists);
      await rejects(c.get("01a20000-0000-7000-8000-000000000000"), Code.NotFound);
      const invalid = await rejects(c.enqueue("x", {}, { queue: "no spaces" }), Code.InvalidArgument);
      assert.equal(invalid.field, "queue");
      const keyed = await c.list({ queues: [queue], fairnessKeys: ["tenant-1"] });
      assert.deepEqual(keyed.jobs.map((j) => j.id), [job.id]);
      assert.equal((await c.list({ queues: [queue], fairnessKeys: ["tenant-2"] })).jobs.length, 0);
      const badKey = await rejects(c.enqueue("x", {}, { queue, fairnessKey: "k".repeat(129) }), Code.InvalidArgument);
      assert.equal(badKey.field, "fairness_key");
      assert.ok(invalid.requestId, "an error carries the request id");
    });
  }

  test("enqueueMany stores all or none", async () => {
    const c = new Client({ url: server().url });
    const queue = queueName("many");
    const res = await c.enqueueMany([{ kind: "a", args: { n: 1 }, queue }, { kind: "b", queue, delay: 60_000 }]);
    assert.deepEqual(res.map((r) => [r.job.kind, r.job.state, r.existing]), [["a", "queued", false], ["b", "scheduled", false]]);
    assert.deepEqual(res[1]!.job.args, {}, "args default to {}");
    const bad = await rejects(c.enqueueMany([{ kind: "a", queue }, { kind: "b", queue, maxAttempts: -1 }]), Code.InvalidArgument);
    assert.equal(bad.field, "jobs[1].max_attempts");
    assert.equal((await c.list({ queues: [queue] })).jobs.length, 2, "the refused batch stored nothing");
  });

  test("a merge key merges enqueues into the job that waits", async () => {
    const c = new Client({ url: server().url });
    const queue = queueName("merge");
    const options = { queue, mergeKey: queue, merge: "append" } as const;
    const first = await c.enqueue("digest", { n: 1 }, options);
    assert.equal(first.merged, false);
    assert.equal(first.job.mergeKey, queue);
    const [again] = await c.enqueueMany([{ kind: "digest", args: { n: 2 }, ...options }]);
    assert.equal(again!.merged, true);
    assert.equal(again!.job.id, first.job.id);
    assert.deepEqual((await c.get(first.job.id)).args, [{ n: 1 }, { n: 2 }]);
    const bad = await rejects(c.enqueue("digest", {}, { queue, merge: "replace" }), Code.InvalidArgument);
    assert.equal(bad.field, "merge");
  });

  test("list filters and pages; listAll walks every page", async () => {
    const c = new Client({ url: server().url });
    const queue = queueName("list");
    await c.enqueueMany(Array.from({ length: 7 }, (_, i) => ({ kind: i % 2 ? "odd" : "even", args: { i }, queue })));
    const first = await c.list({ queues: [queue], limit: 3, ascending: true });
    assert.deepEqual(first.jobs.map((j) => (j.args as { i: number }).i), [0, 1, 2]);
    assert.notEqual(first.nextCursor, "");
    const second = await c.list({ queues: [queue], limit: 3, ascending: true, cursor: first.nextCursor });
    assert.deepEqual(second.jobs.map((j) => (j.args as { i: number }).i), [3, 4, 5]);
    const odd = await c.list({ queues: [queue], kinds: ["odd"], states: ["queued"] });
    assert.deepEqual(odd.jobs.map((j) => (j.args as { i: number }).i), [5, 3, 1], "newest first");
    assert.equal((await c.list({ queues: [queue], createdBefore: new Date(Date.now() - 3600_000) })).jobs.length, 0);
    const all = [];
    for await (const j of c.listAll({ queues: [queue], limit: 2 })) all.push(j);
    assert.equal(all.length, 7);
  });

  test("cancel ends a job once; events tell its history", async () => {
    const c = new Client({ url: server().url });
    const { job } = await c.enqueue("x", {}, { queue: queueName("cancel") });
    const canceled = await c.cancel(job.id, { reason: "not needed" });
    assert.equal(canceled.state, "canceled");
    await rejects(c.cancel(job.id), Code.FailedPrecondition);
    const { events } = await c.events(job.id);
    assert.deepEqual(events.map((e) => [e.from, e.to]), [["", "queued"], ["queued", "canceled"]]);
    assert.equal(events[1]!.reason, "not needed");
  });

  test("resume refuses a job that is not suspended; replay one that is not failed", async () => {
    const c = new Client({ url: server().url });
    const { job } = await c.enqueue("x", {}, { queue: queueName("resume") });
    await rejects(c.resume(job.id, { data: { ok: true } }), Code.FailedPrecondition);
    await rejects(c.replay(job.id), Code.FailedPrecondition);
    assert.equal((await c.deadLetterStats()).count >= 0, true);
  });

  test("retry in place refuses a job that is not failed; setRetries sets a waiting job's budget", async () => {
    const c = new Client({ url: server().url });
    const queue = queueName("retry");
    const { job } = await c.enqueue("x", {}, { queue, delay: 3600_000 });
    await rejects(c.retry(job.id, { retries: 2 }), Code.FailedPrecondition);
    const bad = await rejects(c.retry(job.id, { retries: -1 }), Code.InvalidArgument);
    assert.equal(bad.field, "retries");
    assert.equal((await c.setRetries(job.id, 7)).maxAttempts, 7);
    const low = await rejects(c.setRetries(job.id, 0), Code.InvalidArgument);
    assert.equal(low.field, "max_attempts");
    await rejects(c.setRetries("01a20000-0000-7000-8000-000000000000", 3), Code.NotFound);
    assert.deepEqual(await c.retryMany({ queues: [queue] }), { jobs: [], retriedBy: "api", skipped: 0 });
  });

  test("compactKind replaces a group's waiting jobs by one; lineage reads it both ways", async () => {
    const c = new Client({ url: server().url });
    const queue = queueName("compact");
    const kind = `compact-${queue}`; // no worker takes it: its jobs wait
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push((await c.enqueue(kind, { n }, { queue, groupKey: "doc-7" })).job.id);
    }
    const none = await c.compactKind(kind, { over: 3 });
    assert.deepEqual(none, { groups: 0, jobs: 0, compacted: [], refused: [] });
    const refused = await c.compactKind(kind, { merge: "append" });
    assert.equal(refused.groups, 0);
    assert.deepEqual(refused.refused.map((g) => [g.groupKey, g.jobId]), [["doc-7", ids[0]]]);

    const res = await c.compactKind(kind, { groupKey: "doc-7", merge: "replace" });
    assert.equal(res.groups, 1);
    assert.equal(res.jobs, 3);
    assert.deepEqual(res.compacted[0]!.replaced, ids);
    const job = await c.get(res.compacted[0]!.newJobId);
    assert.deepEqual(job.args, { n: 3 });
    assert.equal(job.state, "queued");
    assert.equal((await c.get(ids[0]!)).state, "canceled");
    assert.deepEqual(await c.lineage(job.id), { compactedFrom: ids, compactedInto: "" });
    assert.deepEqual(await c.lineage(ids[1]!), { compactedFrom: [], compactedInto: job.id });

    const bad = await rejects(c.compactKind(kind, { over: -1 }), Code.InvalidArgument);
    assert.equal(bad.field, "over");
  });
});

describe("Client with API keys", () => {
  const server = serverFor({ apiKey: true });

  for (const [name, options] of Object.entries(transports)) {
    test(`needs the key, ${name}`, async () => {
      await rejects(new Client({ url: server().url, ...options }).enqueue("x", {}), Code.Unauthenticated);
      await rejects(new Client({ url: server().url, apiKey: "hop_wrong", ...options }).enqueue("x", {}), Code.Unauthenticated);
      const { job } = await new Client({ url: server().url, apiKey: server().apiKey, ...options }).enqueue("x", { n: 1 }, { queue: queueName(name) });
      assert.deepEqual(job.args, { n: 1 });
    });
  }
});
