// npm run bench -- [--jobs N] [--concurrency N] [--mode stream|poll] [--http 1.1|2] [--url URL]
//                   [--group N [--batch]]
//
// With --group N the jobs are enqueued in groups of N (group keys g0, g1, …: a group's jobs run
// one at a time), and with --batch as well they are worked by a batch handler (maxJobs N)
// instead of one by one.
//
// Enqueues --jobs no-op jobs (in batches of 1,000, into a fresh queue bench-<random>), then
// works them with the SDK's Worker and prints jobs/s: from the worker's start until every
// outcome is reported. Without --url it starts `hopper serve` on a fresh SQLite file
// ($HOPPER_BIN, or built from this repository); with --url it uses that server
// ($HOPPER_API_KEY for its key).

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client, Worker } from "../src/index.js";
import type { Batch } from "../src/index.js";
import { HopperServer, hopperBinary } from "../test/support/hopper-server.js";

const { values: opt } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    concurrency: { type: "string", default: "100" },
    mode: { type: "string", default: "stream" },
    http: { type: "string", default: "2" },
    url: { type: "string" },
    json: { type: "boolean", default: false },
    group: { type: "string", default: "0" },
    batch: { type: "boolean", default: false },
  },
});
const jobs = Number(opt.jobs);
const concurrency = Number(opt.concurrency);
const mode = opt.mode as "stream" | "poll";
const httpVersion = opt.http as "1.1" | "2";
const group = Number(opt.group);

const server = opt.url ? undefined : await HopperServer.start(hopperBinary(mkdtempSync(join(tmpdir(), "hopper-bench-"))));
const conn = { url: opt.url ?? server!.url, apiKey: process.env.HOPPER_API_KEY, httpVersion };
try {
  const queue = `bench-${Math.random().toString(36).slice(2, 10)}`;
  const client = new Client(conn);
  const t0 = performance.now();
  for (let i = 0; i < jobs; i += 1000) {
    const n = Math.min(1000, jobs - i);
    await client.enqueueMany(Array.from({ length: n }, (_, k) => ({
      kind: "bench.noop", args: {}, queue, groupKey: group > 0 ? `g${Math.floor((i + k) / group)}` : undefined,
    })));
  }
  const enqueueSecs = (performance.now() - t0) / 1000;

  let handled = 0;
  let allHandled: () => void;
  const handledAll = new Promise<void>((r) => (allHandled = r));
  const noop = () => { if (++handled === jobs) allHandled(); };
  const worker = new Worker({
    ...conn, queue, concurrency, mode,
    ...(opt.batch
      ? { batchHandlers: { "bench.noop": { maxJobs: group, handle: (b: Batch) => b.jobs.forEach(noop) } } }
      : { handlers: { "bench.noop": noop } }),
  });
  const t1 = performance.now();
  worker.start();
  await handledAll;
  while (worker.running > 0) await new Promise((r) => setImmediate(r)); // the last outcomes are reported
  const workSecs = (performance.now() - t1) / 1000;
  await worker.stop();

  const result = {
    jobs, mode, concurrency, http: httpVersion, group, batch: opt.batch, enqueue_per_sec: Math.round(jobs / enqueueSecs),
    jobs_per_sec: Math.round(jobs / workSecs), seconds: +workSecs.toFixed(2),
  };
  if (opt.json) console.log(JSON.stringify(result));
  else console.log(`${jobs} jobs (${mode}, concurrency ${concurrency}, HTTP/${httpVersion}${group ? `, groups of ${group}${opt.batch ? " in batches" : ""}` : ""}): enqueued at ${result.enqueue_per_sec}/s, worked at ${result.jobs_per_sec} jobs/s (${result.seconds} s)`);
} finally {
  await server?.close();
}
