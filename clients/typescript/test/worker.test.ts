// The Worker against a real `hopper serve`, in both modes: what each way of ending an attempt
// does to the job.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code, createClient } from "@connectrpc/connect";
import {
  BusinessError, Client, failWithCheckpoint,
  JobTimeoutError, LeaseLostError, NoRetryError, RetryAfterError, ShutdownError, SnoozeError, SuspendError,
} from "../src/index.js";
import type { RunningJob } from "../src/index.js";
import { createTransport } from "../src/connection.js";
import { QueueService } from "../src/gen/hopper/v1/hopper_pb.js";
import { eventually, gate, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

/** until resolves when signal aborts, with its reason. */
const until = (signal: AbortSignal) => new Promise<unknown>((r) => signal.addEventListener("abort", () => r(signal.reason), { once: true }));

for (const mode of ["stream", "poll"] as const) {
  describe(`Worker in ${mode} mode`, { concurrency: true }, () => {
    const server = serverFor();
    const client = () => new Client({ url: server().url });

    test("completes jobs with what the handler returns, no more at once than its concurrency", async (t) => {
      const queue = queueName(`complete-${mode}`);
      const c = client();
      let running = 0;
      let most = 0;
      startWorker(server(), {
        queue, mode, concurrency: 3, handlers: {
          add: async (job: RunningJob<{ a: number; b: number }>) => {
            most = Math.max(most, ++running);
            await new Promise((r) => setTimeout(r, 20));
            running--;
            return { sum: job.args.a + job.args.b, attempt: job.attempt, trace: job.headers.trace };
          },
        },
      }, (fn) => t.after(fn));
      const res = await c.enqueueMany(Array.from({ length: 12 }, (_, i) => ({ kind: "add", args: { a: i, b: 1 }, queue, headers: { trace: `t${i}` } })));
      for (const [i, r] of res.entries()) {
        const job = await waitForState(c, r.job.id, "completed");
        assert.deepEqual(job.result, { sum: i + 1, attempt: 1, trace: `t${i}` });
      }
      assert.ok(most <= 3, `ran ${most} at once`);
    });

    test("works several queues, their jobs shared by the queues' weights", async (t) => {
      const reports = queueName(`reports-${mode}`);
      const emails = queueName(`emails-${mode}`);
      const c = client();
      const queues = createClient(QueueService, createTransport({ url: server().url, apiKey: server().apiKey }));
      await queues.set({ queue: reports, weight: 3 });
      const res = await c.enqueueMany([reports, emails].flatMap((queue) =>
        Array.from({ length: 8 }, () => ({ kind: "report", args: {}, queue }))));
      const started: string[] = [];
      const g = gate();
      startWorker(server(), {
        queue: reports, queues: [emails, reports], mode, concurrency: 4, handlers: {
          report: async (job: RunningJob) => {
            started.push(job.queue);
            await g.wait;
          },
        },
      }, (fn) => t.after(fn));
      await eventually(() => started.length === 4, "four jobs to start");
      if (mode === "stream") { // a poll asks for the slots free at the moment: its split varies
        assert.deepEqual(started.toSorted(), [emails, reports, reports, reports], "3:1 of a credit of 4");
      }
      g.open();
      for (const r of res) await waitForState(c, r.job.id, "completed");
    });

    test("a thrown error is retried with its stack recorded; RetryAfterError and a kind's policy set the wait", async (t) => {
      const queue = queueName(`retry-${mode}`);
      const c = client();
      // The waits are measured from the handler's throw, not from the attempt's recorded end:
      // the server sets the retry's time when the report arrives, and the end is written after
      // it, later by the writer's queue on a loaded machine.
      let laterThrownAt = 0;
      let patientThrownAt = 0;
      startWorker(server(), {
        queue, mode, handlers: {
          flaky: (job: RunningJob) => {
            if (job.attempt === 1) throw new Error("flaky the first time");
            return "ok";
          },
          later: (job: RunningJob) => {
            if (job.attempt === 1) {
              laterThrownAt = Date.now();
              throw new RetryAfterError(300, "rate limited");
            }
            return "ok";
          },
          crash: (job: RunningJob<{ user?: { name: string } }>) => job.args.user!.name,
          patient: {
            retryPolicy: { base: 200, jitter: -1 },
            handle: (job: RunningJob) => {
              if (job.attempt === 1) {
                patientThrownAt = Date.now();
                throw new Error("not yet");
              }
              return "ok";
            },
          },
        },
      }, (fn) => t.after(fn));
      const { job: flaky } = await c.enqueue("flaky", {}, { queue, retryPolicy: { base: 50, jitter: -1 } });
      const { job: later } = await c.enqueue("later", {}, { queue });
      const { job: crash } = await c.enqueue("crash", {}, { queue, maxAttempts: 1 });
      const { job: patient } = await c.enqueue("patient", {}, { queue });
      const done = await waitForState(c, flaky.id, "completed");
      assert.equal(done.attempt, 2);
      const { attempts } = await c.events(flaky.id);
      assert.deepEqual([attempts[0]!.outcome, attempts[0]!.error], ["error", "flaky the first time"]);
      assert.match(attempts[0]!.stack, /^Error: flaky the first time\n +at /, "the stack is recorded apart");
      const laterDone = await waitForState(c, later.id, "completed");
      const la = (await c.events(later.id)).attempts;
      assert.equal(la[0]!.error, "retry after 300ms: rate limited");
      const waited = laterDone.startedAt!.getTime() - laterThrownAt;
      assert.ok(waited >= 295 && waited < 900, `retried after ${waited} ms, not the default 1 s`);
      const crashed = (await c.events((await waitForState(c, crash.id, "failed")).id)).attempts;
      assert.equal(crashed[0]!.outcome, "panic");
      assert.match(crashed[0]!.error, /^TypeError: Cannot read properties of undefined/);
      // The kind's backoff (200 ms, no jitter) goes with the failure, over the server's default (1 s).
      const patientDone = await waitForState(c, patient.id, "completed");
      const pa = (await c.events(patient.id)).attempts;
      assert.equal(pa[0]!.error, "not yet");
      const patientWaited = patientDone.startedAt!.getTime() - patientThrownAt;
      assert.ok(patientWaited >= 195 && patientWaited < 900, `retried after ${patientWaited} ms: the kind's backoff, not the default 1 s`);
    });

    test("NoRetryError makes a dead letter at once; a replay runs it again", async (t) => {
      const queue = queueName(`dead-${mode}`);
      const c = client();
      let fixed = false;
      startWorker(server(), {
        queue, mode, handlers: {
          charge: (job: RunningJob<{ amount: number }>) => {
            if (!fixed) throw new NoRetryError(`amount ${job.args.amount} is negative`);
            return { charged: job.args.amount };
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("charge", { amount: -5 }, { queue, maxAttempts: 5 });
      const dead = await waitForState(c, job.id, "failed");
      assert.equal(dead.attempt, 1);
      assert.equal(dead.lastError, "not retryable: amount -5 is negative", "worded as a Go worker words it");
      const letters = await c.listDeadLetters({ queues: [queue] });
      assert.deepEqual(letters.jobs.map((j) => j.id), [job.id]);
      fixed = true;
      const replay = await c.replay(job.id);
      assert.equal(replay.job.originalId, job.id);
      assert.equal(replay.replayedBy, "api");
      assert.deepEqual((await waitForState(c, replay.job.id, "completed")).result, { charged: -5 });
      assert.equal((await c.get(job.id)).state, "failed", "the dead letter stays as it was");
      assert.deepEqual((await c.replayMany({ queues: [queue] })).jobs, [], "it was replayed already");
      assert.deepEqual((await c.listDeadLetters({ queues: [queue] })).jobs, [], "dealt with: left out");
      const all = await c.listDeadLetters({ queues: [queue], includeReplayed: true });
      assert.deepEqual(all.jobs.map((j) => j.id), [job.id]);
      assert.equal(all.replays[job.id]?.count, 1);
      assert.equal(all.replays[job.id]?.lastJobId, replay.job.id);
    });

    test("a snooze runs the job again later without using an attempt", async (t) => {
      const queue = queueName(`snooze-${mode}`);
      const c = client();
      let runs = 0;
      startWorker(server(), {
        queue, mode, handlers: { wait: () => { if (++runs === 1) throw new SnoozeError(200); return runs; } },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("wait", {}, { queue });
      const done = await waitForState(c, job.id, "completed");
      assert.equal(done.result, 2);
      assert.equal(done.attempt, 1, "the snooze used no attempt");
    });

    test("a suspension keeps its checkpoint until resume hands data to the next attempt", async (t) => {
      const queue = queueName(`suspend-${mode}`);
      const c = client();
      startWorker(server(), {
        queue, mode, handlers: {
          approve: (job: RunningJob<{ order: number }>) => {
            if (job.resumeData === undefined) throw new SuspendError({ checkpoint: { step: "asked", order: job.args.order } });
            return { checkpoint: job.checkpoint, decision: job.resumeData };
          },
          nap: (job: RunningJob) => {
            if (job.checkpoint === undefined) throw new SuspendError({ checkpoint: 1, until: new Date(Date.now() + 300) });
            return job.checkpoint;
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("approve", { order: 9 }, { queue });
      const parked = await waitForState(c, job.id, "suspended");
      assert.deepEqual(parked.checkpoint, { step: "asked", order: 9 });
      await c.resume(job.id, { data: { approved: true }, reason: "ok by ops" });
      const done = await waitForState(c, job.id, "completed");
      assert.deepEqual(done.result, { checkpoint: { step: "asked", order: 9 }, decision: { approved: true } });

      const { job: nap } = await c.enqueue("nap", {}, { queue });
      assert.equal((await waitForState(c, nap.id, "completed")).result, 1);
    });

    test("a failed attempt's checkpoint reaches the next; a business error fails for good with its code", async (t) => {
      const queue = queueName(`failwith-${mode}`);
      const c = client();
      startWorker(server(), {
        queue, mode, handlers: {
          parts: (job: RunningJob) => {
            const done = (job.checkpoint as { done: number } | undefined)?.done ?? 0;
            if (job.attempt < 3) throw failWithCheckpoint(new RetryAfterError(0, "part failed"), { done: done + 3 });
            return done;
          },
          charge: () => {
            throw failWithCheckpoint(new BusinessError("card_declined", "insufficient funds"), { charged: false });
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("parts", {}, { queue, maxAttempts: 3 });
      assert.equal((await waitForState(c, job.id, "completed")).result, 6, "each attempt got the previous one's checkpoint");

      const { job: charge } = await c.enqueue("charge", {}, { queue, maxAttempts: 5 });
      const failed = await waitForState(c, charge.id, "failed");
      assert.equal(failed.attempt, 1, "not retried");
      assert.equal(failed.lastErrorCode, "card_declined");
      assert.equal(failed.lastError, "card_declined: insufficient funds");
      assert.deepEqual(failed.checkpoint, { charged: false });
      assert.equal((await c.events(charge.id)).attempts[0]!.errorCode, "card_declined");
      const listed = await c.list({ errorCodes: ["card_declined"], queues: [queue] });
      assert.deepEqual(listed.jobs.map((j) => j.id), [charge.id]);
      const dead = await c.listDeadLetters({ errorCodes: ["card_declined"], queues: [queue] });
      assert.deepEqual(dead.jobs.map((j) => j.id), [charge.id]);
    });

    test("a business error is retried when the kind's or the job's retry policy says so, keeping its code", async (t) => {
      const queue = queueName(`bizretry-${mode}`);
      const c = client();
      const declineTwice = (job: RunningJob) => {
        if (job.attempt < 3) throw new BusinessError("card_declined", "insufficient funds");
        return "charged";
      };
      startWorker(server(), {
        queue, mode, handlers: {
          kindRetries: { retryPolicy: { base: 50, jitter: -1, retryBusinessErrors: true }, handle: declineTwice },
          jobRetries: declineTwice,
        },
      }, (fn) => t.after(fn));
      const { job: byKind } = await c.enqueue("kindRetries", {}, { queue, maxAttempts: 3 });
      const { job: byJob } = await c.enqueue("jobRetries", {}, { queue, maxAttempts: 3, retryPolicy: { base: 50, jitter: -1, retryBusinessErrors: true } });
      for (const j of [byKind, byJob]) {
        const done = await waitForState(c, j.id, "completed");
        assert.equal(done.attempt, 3);
        const { attempts } = await c.events(j.id);
        assert.deepEqual(attempts.map((a) => a.errorCode), ["card_declined", "card_declined", ""]);
      }
    });

    test("progress and heartbeats reach the job while it runs", async (t) => {
      const queue = queueName(`progress-${mode}`);
      const c = client();
      const g = gate();
      startWorker(server(), {
        queue, mode, handlers: {
          long: async (job: RunningJob) => {
            await job.heartbeat();
            await job.progress(40, "rendering");
            await job.extendLease(20_000);
            await g.wait;
            return "done";
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("long", {}, { queue });
      await eventually(async () => (await c.get(job.id)).progressPercent === 40, "progress 40");
      const running = await c.get(job.id);
      assert.equal(running.progressMessage, "rendering");
      assert.ok(running.heartbeatAt);
      // Renewals keep the extended lease (a renewal already on its way may send the old one once).
      await eventually(async () => (await c.get(job.id)).leaseExpiresAt!.getTime() > Date.now() + 15_000, "the lease to be extended");
      g.open();
      await waitForState(c, job.id, "completed");
    });

    test("a timeout aborts the handler's signal and fails the attempt", async (t) => {
      const queue = queueName(`timeout-${mode}`);
      const c = client();
      startWorker(server(), {
        queue, mode, handlers: {
          slow: async (job: RunningJob) => { throw await until(job.signal); },
          slowKind: { handle: async (job: RunningJob) => { const why = await until(job.signal); throw new Error(`stopped: ${String(why)}`); }, timeout: 150 },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("slow", {}, { queue, timeout: 200, maxAttempts: 1 });
      const failed = await waitForState(c, job.id, "failed");
      assert.equal(failed.lastError, "job execution timeout after 200ms");
      assert.equal((await c.events(job.id)).attempts[0]!.outcome, "timeout");
      const { job: k } = await c.enqueue("slowKind", {}, { queue, maxAttempts: 1 });
      const kf = await waitForState(c, k.id, "failed");
      assert.equal(kf.lastError, "job execution timeout after 150ms: stopped: JobTimeoutError: job execution timeout after 150ms");
    });

    test("a cancel reaches the running handler as a lost lease", async (t) => {
      const queue = queueName(`cancel-${mode}`);
      const c = client();
      let reason: unknown;
      const started = gate();
      const w = startWorker(server(), {
        queue, mode, leaseDuration: 1500, handlers: {
          long: async (job: RunningJob) => { started.open(); reason = await until(job.signal); throw reason; },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("long", {}, { queue });
      await started.wait;
      await c.cancel(job.id);
      await eventually(() => reason !== undefined, "the handler to be told", 5000);
      assert.ok(reason instanceof LeaseLostError);
      await eventually(() => w.running === 0, "the attempt to end");
      assert.equal((await c.get(job.id)).state, "canceled");
    });

    test("a graceful stop lets running jobs finish and hands the others back", async (t) => {
      const queue = queueName(`stop-${mode}`);
      const c = client();
      let started = 0;
      const w = startWorker(server(), {
        queue, mode, concurrency: 2, handlers: {
          work: async () => { started++; await new Promise((r) => setTimeout(r, 300)); return "finished"; },
        },
      }, (fn) => t.after(fn));
      const res = await c.enqueueMany(Array.from({ length: 6 }, () => ({ kind: "work", queue })));
      await eventually(() => started === 2, "two jobs to start");
      await w.stop();
      const jobs = await Promise.all(res.map((r) => c.get(r.job.id)));
      const states = jobs.map((j) => j.state).sort();
      assert.equal(started, 2, "no job started once stopping");
      if (mode === "stream") {
        // The two jobs pushed as credit freed are released once the stream is closed. A push
        // still on the wire when the stream closes (the server took longer than the settle's
        // 100 ms to claim it) is never received, and stays the worker's until its lease lapses:
        // the protocol cannot tell it from one received. The two jobs never pushed are queued.
        const inFlight = states.filter((st) => st === "running").length;
        assert.ok(inFlight <= 2, JSON.stringify(states));
        assert.deepEqual(states.filter((st) => st !== "running"), ["completed", "completed", ...Array(4 - inFlight).fill("queued")]);
      } else {
        assert.deepEqual(states, ["completed", "completed", "queued", "queued", "queued", "queued"]);
      }
      for (const j of jobs) {
        assert.equal(j.rescues, 0, "a graceful stop is no lost worker");
        if (j.state === "queued") assert.equal(j.attempt, 0, "a released job gets its attempt back");
      }
    });

    test("a hard stop aborts handlers with a ShutdownError and releases their jobs", async (t) => {
      const queue = queueName(`hard-${mode}`);
      const c = client();
      let reason: unknown;
      const started = gate();
      const w = startWorker(server(), {
        queue, mode, handlers: { stuck: async (job: RunningJob) => { started.open(); reason = await until(job.signal); throw reason; } },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("stuck", {}, { queue });
      await started.wait;
      await w.stop(AbortSignal.timeout(100));
      assert.ok(reason instanceof ShutdownError);
      const after = await c.get(job.id);
      assert.deepEqual([after.state, after.attempt, after.rescues], ["queued", 0, 0]);
    });
  });
}

describe("Worker with API keys", () => {
  const server = serverFor({ apiKey: true });

  for (const mode of ["stream", "poll"] as const) {
    test(`works jobs with its key, ${mode} mode`, async (t) => {
      const c = new Client({ url: server().url, apiKey: server().apiKey });
      const queue = queueName(`key-${mode}`);
      startWorker(server(), { queue, mode, handlers: { echo: (job: RunningJob) => job.args } }, (fn) => t.after(fn));
      const { job } = await c.enqueue("echo", { hi: 1 }, { queue });
      assert.deepEqual((await waitForState(c, job.id, "completed")).result, { hi: 1 });
    });

    test(`stops at once, saying why once, when the server refuses its key, ${mode} mode`, async (t) => {
      const errors: string[] = [];
      const logger = { debug() {}, info() {}, warn() {}, error: (m: string) => errors.push(m) };
      const w = startWorker(server(), {
        queue: queueName(`refused-${mode}`), mode, apiKey: "hop_notakeyatall", logger, handlers: { echo: (job: RunningJob) => job.args },
      }, (fn) => t.after(fn));
      await eventually(() => w.error !== undefined, "the refusal");
      assert.equal(w.error?.code, Code.Unauthenticated);
      await new Promise((r) => setTimeout(r, 300)); // a worker that retried would have logged again (backoff starts at 100 ms)
      assert.deepEqual(errors.filter((m) => m.includes("refused")).length, 1, errors.join("; "));
    });
  }
});

// JobTimeoutError is what the timeout test's handler rethrows.
void JobTimeoutError;
