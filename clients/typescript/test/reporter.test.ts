// Outcomes leave in Report batches: alone at a low rate, gathered while earlier requests are
// on the wire, each answered with its own verdict.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { HopperError } from "../src/index.js";
import { ReportResponseSchema, VerdictSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import type { ReportRequest, ReportResponse, WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import type { Outcome } from "../src/outcome.js";
import { Batcher, reportUntilVerdict } from "../src/reporter.js";

/** A Report call the test answers. */
interface Call {
  req: ReportRequest;
  answer(res: ReportResponse | Error): void;
}

/** fakeApi records Report calls and lets the test answer them. */
function fakeApi(): { api: RpcClient<typeof WorkerService>; calls: Call[] } {
  const calls: Call[] = [];
  const api = {
    report: (req: ReportRequest) => new Promise<ReportResponse>((resolve, reject) => {
      calls.push({ req, answer: (r) => (r instanceof Error ? reject(r) : resolve(r)) });
    }),
  } as unknown as RpcClient<typeof WorkerService>;
  return { api, calls };
}

const complete = (i: number): Outcome => ({ type: "complete", job: { id: `j${i}`, leaseToken: BigInt(i) }, result: `${i}` });
const verdicts = (...codes: string[]) => create(ReportResponseSchema, { outcomes: codes.map((code) => create(VerdictSchema, { code, message: code === "ok" ? "" : `no: ${code}` })) });
const ids = (c: Call) => c.req.outcomes.map((o) => (o.outcome.case === "complete" ? o.outcome.value.id : "?"));
const tick = () => new Promise((r) => setImmediate(r));

/** settled says how each promise ended: "ok" or its error's code name. */
async function settled(ps: Promise<void>[]): Promise<string[]> {
  return Promise.all(ps.map((p) => p.then(() => "ok", (e: HopperError) => Code[e.code]!)));
}

describe("Batcher", () => {
  test("the first outcomes go at once, alone; the next gather until a request slot is free", async () => {
    const { api, calls } = fakeApi();
    const b = new Batcher(api);
    const ps = [0, 1, 2, 3, 4].map((i) => b.report(complete(i), 10_000));
    await tick();
    assert.deepEqual(calls.map(ids), [["j0"], ["j1"]], "two requests on the wire, one outcome each");
    calls[0]!.answer(verdicts("ok"));
    await tick();
    assert.deepEqual(calls.map(ids), [["j0"], ["j1"], ["j2", "j3", "j4"]], "the slot sends all that waited");
    calls[1]!.answer(verdicts("failed_precondition"));
    calls[2]!.answer(verdicts("ok", "invalid_argument", "unavailable"));
    assert.deepEqual(await settled(ps), ["ok", "FailedPrecondition", "ok", "InvalidArgument", "Unavailable"]);
    const last = b.report(complete(9), 10_000);
    assert.deepEqual(ids(calls[3]!), ["j9"], "a free slot sends at once");
    calls[3]!.answer(verdicts("ok"));
    await last;
  });

  test("a request that fails fails each of its items with its error; a wrong count is internal", async () => {
    const { api, calls } = fakeApi();
    const b = new Batcher(api);
    const ps = [b.report(complete(0), 10_000), b.report(complete(1), 10_000)];
    await tick();
    calls[0]!.answer(new ConnectError("connection refused", Code.Unavailable));
    calls[1]!.answer(verdicts("ok", "ok"));
    assert.deepEqual(await settled(ps), ["Unavailable", "Internal"]);
  });

  test("at most 500 outcomes a request", async () => {
    const { api, calls } = fakeApi();
    const b = new Batcher(api);
    const ps = Array.from({ length: 1200 }, (_, i) => b.report(complete(i), 10_000));
    await tick();
    calls[0]!.answer(verdicts("ok"));
    calls[1]!.answer(verdicts("ok"));
    await tick();
    assert.deepEqual(calls.slice(2).map((c) => c.req.outcomes.length), [500, 500]);
    calls[2]!.answer(verdicts(...Array(500).fill("ok")));
    await tick();
    assert.equal(calls[4]!.req.outcomes.length, 198);
    calls[3]!.answer(verdicts(...Array(500).fill("ok")));
    calls[4]!.answer(verdicts(...Array(198).fill("ok")));
    assert.ok((await settled(ps)).every((s) => s === "ok"));
  });

  test("a fail carries how the attempt ended", async () => {
    const { api, calls } = fakeApi();
    const b = new Batcher(api);
    const p = b.report({
      type: "fail", job: { id: "j", leaseToken: 3n }, outcome: "timeout", error: "job execution timeout after 1s: x",
      stack: "Error: x\n    at f", noRetry: true, retryBackoff: 1500, retryPolicy: { base: 100, jitter: -1, retryBusinessErrors: true },
    }, 10_000);
    await tick();
    const o = calls[0]!.req.outcomes[0]!.outcome;
    assert.equal(o.case, "fail");
    const f = o.value!;
    assert.ok("outcome" in f);
    assert.deepEqual([f.outcome, f.error, f.stack, f.noRetry, Number(f.retryBackoff!.seconds), f.retryBackoff!.nanos],
      ["timeout", "job execution timeout after 1s: x", "Error: x\n    at f", true, 1, 500_000_000]);
    assert.deepEqual([Number(f.retryPolicy!.base!.nanos), f.retryPolicy!.jitter, f.retryPolicy!.retryBusinessErrors], [100_000_000, -1, true]);
    calls[0]!.answer(verdicts("ok"));
    await p;
  });
});

describe("reportUntilVerdict", () => {
  test("retries an unavailable server; a lost lease is the end of it; a refusal throws", async () => {
    let tries = 0;
    const answers = [Code.Unavailable, Code.Unavailable, undefined];
    const reporter = { report: async () => { const c = answers[tries++]; if (c !== undefined) throw new HopperError(c, "x"); } };
    await reportUntilVerdict(reporter, complete(1), Date.now() + 10_000);
    assert.equal(tries, 3);
    await reportUntilVerdict({ report: async () => { throw new HopperError(Code.FailedPrecondition, "gone"); } }, complete(1), Date.now() + 10_000);
    await assert.rejects(reportUntilVerdict({ report: async () => { throw new HopperError(Code.InvalidArgument, "bad"); } }, complete(1), Date.now() + 10_000),
      (e: HopperError) => e.code === Code.InvalidArgument);
  });
});
