// A worker whose key the server refuses on an outcome's report or a lease renewal (issue 31,
// item 8) stops as when its stream or a poll is refused (worker.test.ts, "Worker with API
// keys"): the worker hears of it once, and nothing retries the refused call.

import * as assert from "node:assert/strict";
import { describe, mock, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { Tracker } from "../src/backoff.js";
import { HopperError } from "../src/errors.js";
import { execute } from "../src/execute.js";
import type { Executor } from "../src/execute.js";
import { ActivatedJobSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import type { WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import { LeaseKeeper } from "../src/lease-keeper.js";
import { silent } from "../src/logger.js";
import { Attempt } from "../src/running-job.js";
import { testLimits } from "./support/limits.js";

/** settle lets the promises that mocked time woke run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe("a refused key", () => {
  test("a refused lease renewal stops the keeper and tells the worker once", async (t) => {
    mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
    t.after(() => mock.timers.reset());
    const a = new Attempt(create(ActivatedJobSchema, { id: "a", leaseToken: 1n }), 3000, undefined, testLimits);
    let calls = 0;
    const api = {
      report: async () => {
        calls++;
        throw new ConnectError("missing API key", Code.Unauthenticated);
      },
    } as unknown as RpcClient<typeof WorkerService>;
    const refusals: HopperError[] = [];
    const keeper = new LeaseKeeper({
      api, lease: 3000, backoff: new Tracker("extend leases", { base: 100, multiplier: 2, cap: 1000, jitter: -1 }, silent),
      running: () => [a], refused: (err) => refusals.push(err),
    });
    const stop = new AbortController();
    const done = keeper.run(stop.signal);
    for (let i = 0; i < 10; i++) {
      mock.timers.tick(1000);
      await settle();
    }
    assert.equal(calls, 1, "the refused renewal is not retried");
    assert.deepEqual(refusals.map((e) => e.code), [Code.Unauthenticated]);
    await done; // ended by itself
    stop.abort();
  });

  test("a refused outcome tells the worker, rather than only logging a failed report", async () => {
    const refusals: HopperError[] = [];
    const errors: string[] = [];
    let reports = 0;
    const x: Executor = {
      api: {} as RpcClient<typeof WorkerService>,
      reporter: {
        report: async () => {
          reports++;
          throw new HopperError(Code.Unauthenticated, "missing API key");
        },
      },
      mode: "poll",
      log: { ...silent, error: (m: string) => errors.push(m) },
      handler: () => ({ handle: () => "ok" }),
      decline: () => {},
      leaseSet: () => {},
      refused: (err) => refusals.push(err),
    };
    await execute(x, new Attempt(create(ActivatedJobSchema, { id: "j", kind: "k", leaseToken: 1n, args: "{}" }), 30_000, undefined, testLimits));
    assert.equal(reports, 1, "the refused report is not retried");
    assert.deepEqual(refusals.map((e) => e.code), [Code.Unauthenticated]);
    assert.deepEqual(errors, []);
  });
});
