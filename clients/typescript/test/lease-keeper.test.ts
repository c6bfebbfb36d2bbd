// The lease keeper on mocked time: renewals every third of the shortest lease held, sooner
// when a handler shortens its lease, a failed renewal retried sooner than the cadence, and a
// lease found lost aborts its handler.

import * as assert from "node:assert/strict";
import { describe, mock, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { Tracker } from "../src/backoff.js";
import { LeaseLostError } from "../src/index.js";
import { ActivatedJobSchema, ReportResponseSchema, VerdictSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import type { ReportRequest, WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import { LeaseKeeper } from "../src/lease-keeper.js";
import { silent } from "../src/logger.js";
import { Attempt } from "../src/running-job.js";
import { testLimits } from "./support/limits.js";

/** settle lets the promises that mocked time woke run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe("LeaseKeeper", () => {
  test("follows the shortest lease, retries a failed renewal sooner, and aborts a lost one", async (t) => {
    mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
    t.after(() => mock.timers.reset());
    const a = new Attempt(create(ActivatedJobSchema, { id: "a", leaseToken: 1n }), 30_000, undefined, testLimits);
    const b = new Attempt(create(ActivatedJobSchema, { id: "b", leaseToken: 2n }), 30_000, undefined, testLimits);
    const running = new Set([a, b]);
    const renewals: { at: number; items: string[] }[] = [];
    const api = {
      report: async (req: ReportRequest) => {
        renewals.push({ at: Date.now(), items: req.renewals.map((r) => `${r.id}:${Number(r.duration!.seconds) * 1000 + r.duration!.nanos / 1e6}`) });
        if (renewals.length === 3) throw new ConnectError("connection refused", Code.Unavailable);
        const code = (id: string) => (renewals.length === 5 && id === "b" ? "failed_precondition" : "ok");
        return create(ReportResponseSchema, { renewals: req.renewals.map((r) => create(VerdictSchema, { code: code(r.id) })) });
      },
    } as unknown as RpcClient<typeof WorkerService>;
    const backoff = new Tracker("extend leases", { base: 500, multiplier: 2, cap: 60_000, jitter: -1 }, silent);
    const keeper = new LeaseKeeper({ api, lease: 30_000, backoff, running: () => running });
    const stop = new AbortController();
    const done = keeper.run(stop.signal);

    const step = async (ms: number) => {
      mock.timers.tick(ms);
      await settle();
    };
    await step(10_000); // a third of 30 s
    a.lease = 3000; // a handler shortened its lease
    keeper.shortened();
    await settle();
    await step(1000); // a third of 3 s after the last beat, not 10 s
    await step(1000); // this one fails
    await step(500); // retried after the backoff, sooner than the cadence
    await step(1000); // back on the beat; b's lease is gone
    assert.deepEqual(renewals, [
      { at: 10_000, items: ["a:30000", "b:30000"] },
      { at: 11_000, items: ["a:3000", "b:30000"] },
      { at: 12_000, items: ["a:3000", "b:30000"] },
      { at: 12_500, items: ["a:3000", "b:30000"] },
      { at: 13_500, items: ["a:3000", "b:30000"] },
    ]);
    assert.equal(a.cause, undefined);
    assert.ok(b.cause instanceof LeaseLostError);
    stop.abort();
    await done;
  });
});
