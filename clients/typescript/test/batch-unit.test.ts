// A batch's run without a server: how jobs are gathered into calls, which jobs join the call,
// and what each job's ending reports.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Client as RpcClient } from "@connectrpc/connect";
import { executeBatch, grouped } from "../src/batch.js";
import type { Executor } from "../src/execute.js";
import { ActivatedJobSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import type { WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import type { Batch, BatchHandlerOptions } from "../src/handler.js";
import { LeaseLostError, NoRetryError } from "../src/handler-errors.js";
import { silent } from "../src/logger.js";
import type { Outcome } from "../src/outcome.js";
import { Attempt } from "../src/running-job.js";
import { testLimits } from "./support/limits.js";

function job(id: string, fields: { batchId?: string; args?: string; timeout?: number } = {}) {
  return create(ActivatedJobSchema, {
    id, kind: "k", leaseToken: 1n, args: fields.args ?? "{}", batchId: fields.batchId ?? "",
    timeout: fields.timeout === undefined ? undefined : durationFromMs(fields.timeout),
  });
}

/** executor runs batches of kind k with h, in mode, and keeps what it reports. */
function executor(h: BatchHandlerOptions, mode: "stream" | "poll" = "stream") {
  const reported: Outcome[] = [];
  const x: Executor = {
    api: {} as RpcClient<typeof WorkerService>,
    reporter: { report: async (o) => { reported.push(o); } },
    mode, log: silent, handler: () => undefined, batchHandler: () => h,
    decline: () => {}, leaseSet: () => {}, refused: () => {},
  };
  return { x, reported };
}

const attempts = (...jobs: ReturnType<typeof job>[]) => jobs.map((j) => new Attempt(j, 30_000, undefined, testLimits));
const byId = (reported: Outcome[]) => Object.fromEntries(reported.map((o) => [o.job.id, o]));

describe("grouped", () => {
  test("gathers each batch's jobs, in order, and leaves lone jobs alone", () => {
    const units = grouped([job("a", { batchId: "b1" }), job("x"), job("b", { batchId: "b1" }), job("c", { batchId: "b2" }), job("y")]);
    assert.deepEqual(units.map((u) => u.map((j) => j.id)), [["a", "b"], ["x"], ["c"], ["y"]]);
  });
});

describe("executeBatch", () => {
  test("a job lost before the call or whose args do not decode ends alone; the call decides the others", async () => {
    const calls: string[][] = [];
    const { x, reported } = executor({
      handle: (b: Batch<{ n: number }>) => {
        calls.push(b.jobs.map((j) => j.id));
        b.fail(1, new NoRetryError("bad item"));
        b.setResult(0, { n: b.jobs[0]!.args.n });
      },
    });
    const as = attempts(job("lost"), job("bad", { args: "{" }), job("ok", { args: '{"n":7}' }), job("failed"));
    as[0]!.abort(new LeaseLostError("lease lost"));
    await executeBatch(x, as);
    assert.deepEqual(calls, [["ok", "failed"]]);
    const got = byId(reported);
    assert.equal(got.lost?.type, "release", "stream mode: a lost job's credit is freed");
    assert.equal(got.bad?.type, "fail");
    assert.match((got.bad as { error: string }).error, /^not retryable: decode args of kind "k"/);
    assert.deepEqual(got.ok, { type: "complete", job: { id: "ok", leaseToken: 1n }, result: '{"n":7}' });
    assert.equal(got.failed?.type, "fail");
    assert.equal((got.failed as { error: string; noRetry?: boolean }).error, "not retryable: bad item");
  });

  test("a throw fails every job that joined, each in the same words", async () => {
    const { x, reported } = executor({ handle: () => { throw new Error("bulk request failed"); } }, "poll");
    await executeBatch(x, attempts(job("a"), job("b")));
    assert.deepEqual(reported.map((o) => [o.job.id, o.type, (o as { error?: string }).error]),
      [["a", "fail", "bulk request failed"], ["b", "fail", "bulk request failed"]]);
  });

  test("the batch's timeout is its shortest job's, and stops the call for every job", async () => {
    let signalReason: unknown;
    const { x, reported } = executor({
      handle: (b: Batch) => new Promise((_, reject) => {
        b.signal.addEventListener("abort", () => { signalReason = b.signal.reason; reject(b.signal.reason); }, { once: true });
      }),
    });
    const as = attempts(job("short", { timeout: 30 }), job("long", { timeout: 60_000 }));
    await executeBatch(x, as);
    assert.deepEqual(as.map((a) => a.timeout), [30, 30]);
    assert.equal((signalReason as Error).name, "JobTimeoutError");
    assert.deepEqual(reported.map((o) => [o.job.id, (o as { outcome?: string }).outcome]), [["short", "timeout"], ["long", "timeout"]]);
  });

  test("a job told to stop alone does not stop the call", async () => {
    const as = attempts(job("a"), job("b"));
    const { x, reported } = executor({
      handle: (b: Batch) => {
        as[0]!.abort(new LeaseLostError("lease lost")); // a renewal found a's lease gone
        assert.equal(b.signal.aborted, false);
        assert.equal(b.jobs[0]!.signal.aborted, true);
      },
    }, "poll");
    await executeBatch(x, as);
    assert.deepEqual(reported.map((o) => [o.job.id, o.type]), [["b", "complete"]], "poll mode: nothing said of a lost job");
  });
});
