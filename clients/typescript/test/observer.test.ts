// A worker's observer hears each attempt start and end, with its outcome and run time: the
// events a Go worker's observers hear, to count as metrics.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, NoRetryError } from "../src/index.js";
import type { WorkerEvent } from "../src/index.js";
import { eventually, queueName, serverFor, startWorker, waitForState } from "./support/fixture.js";

describe("Worker observer", () => {
  const server = serverFor();

  test("hears each attempt start and end, with its outcome and run time", async (t) => {
    const queue = queueName("observer");
    const c = new Client({ url: server().url, apiKey: server().apiKey });
    const events: WorkerEvent[] = [];
    startWorker(server(), {
      queue, concurrency: 1, observer: (ev) => events.push(ev), handlers: {
        resize: async () => {
          await new Promise((r) => setTimeout(r, 5));
          return { ok: true };
        },
        broken: async () => {
          throw new NoRetryError("bad image");
        },
      },
    }, (fn) => t.after(fn));
    const ok = await c.enqueue("resize", {}, { queue });
    await waitForState(c, ok.job.id, "completed");
    const bad = await c.enqueue("broken", {}, { queue });
    await waitForState(c, bad.job.id, "failed");
    await eventually(() => events.length === 4, "four events");
    assert.deepEqual(events.map((e) => [e.type, e.jobId, e.kind, e.queue, e.attempt, e.outcome]), [
      ["started", ok.job.id, "resize", queue, 1, undefined],
      ["ended", ok.job.id, "resize", queue, 1, "ok"],
      ["started", bad.job.id, "broken", queue, 1, undefined],
      ["ended", bad.job.id, "broken", queue, 1, "error"],
    ]);
    assert.ok((events[1]!.runMs ?? 0) >= 4, `the handler's time: ${events[1]!.runMs} ms`);
  });
});
