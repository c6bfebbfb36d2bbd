// Limits served, not copied (issue 34, item 2): the worker makes what it reports fit the input
// limits its server serves (ServerService.Info), not limits of its own.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { ServerServiceInfoResponse } from "../src/gen/hopper/v1/hopper_pb.js";
import { Client } from "../src/index.js";
import { builtInLimits, limitsOf } from "../src/text.js";
import { queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("input limits", () => {
  const server = serverFor();

  test("limitsOf takes what a server serves and the built-in limits for what it leaves out", () => {
    assert.deepEqual(limitsOf(undefined), builtInLimits);
    const l = limitsOf({ maxErrorBytes: 100, maxRunAtFuture: { seconds: 60n, nanos: 0 } } as never);
    assert.equal(l.errorBytes, 100);
    assert.equal(l.runAtFutureMs, 60_000);
    assert.equal(l.reasonBytes, builtInLimits.reasonBytes);
  });

  for (const mode of ["poll", "stream"] as const) {
    test(`the worker clips its reports to the server's limits (${mode} mode)`, async (t) => {
      // The server says it takes 100 bytes of error text and 20 of progress message.
      let asked = 0;
      const small: Interceptor = (next) => async (req) => {
        const res = await next(req);
        if (!res.stream && req.method.name === "Info") {
          asked++;
          const info = (res.message as ServerServiceInfoResponse).server!;
          info.inputLimits!.maxErrorBytes = 100;
          info.inputLimits!.maxProgressMessageBytes = 20;
        }
        return res;
      };
      const transport = createConnectTransport({ baseUrl: server().url, httpVersion: "2", useBinaryFormat: true, interceptors: [small] });
      const c = new Client({ url: server().url });
      const queue = queueName("limits");
      startWorker(server(), {
        queue, mode, transport, handlers: {
          wordy: async (job) => {
            await job.progress(10, "p".repeat(300));
            throw new Error("é".repeat(300)); // 600 bytes
          },
        },
      }, (fn) => t.after(fn));
      const { job } = await c.enqueue("wordy", {}, { queue, maxAttempts: 1 });
      const failed = await waitForState(c, job.id, "failed");
      assert.ok(Buffer.byteLength(failed.lastError) <= 100, `clipped to the served limit: ${Buffer.byteLength(failed.lastError)} bytes`);
      assert.ok(failed.lastError.endsWith("…"));
      assert.ok(Buffer.byteLength(failed.progressMessage) <= 20);
      assert.equal(asked, 1, "asked once, before taking jobs");
    });
  }
});
