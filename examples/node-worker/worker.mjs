#!/usr/bin/env node
// worker.mjs: a Hopper worker for two kinds of jobs, with the SDK.
//
//   node worker.mjs [--mode stream|poll] [--concurrency N] [--queue Q]
//
//   resize  {image, width, height, percent, seconds?}
//                                            → completes with {width, height} scaled by percent,
//                                              after seconds (default 0.2)
//   charge  {order, amount}                  → fails for good when amount is negative, else
//                                              completes with {order, charged}
//
// The first SIGINT or SIGTERM stops gracefully (running jobs get 10 s, the others go back to
// the queue); a second one stops at once. HOPPER_URL (default http://127.0.0.1:7070) names
// the server; HOPPER_API_KEY, when set, is sent with every call (a key with the work scope).

import { parseArgs } from "node:util";
import { NoRetryError, Worker } from "@hopperjobs/hopper";

const { values: opt } = parseArgs({
  options: {
    mode: { type: "string", default: "stream" },
    concurrency: { type: "string", default: "4" },
    queue: { type: "string", default: "default" },
  },
});

const handlers = {
  async resize(job) {
    const { width, height, percent, seconds = 0.2 } = job.args;
    await job.progress(50, `resizing ${job.args.image}`);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000)); // stands for the work
    return { width: Math.floor((width * percent) / 100), height: Math.floor((height * percent) / 100) };
  },
  charge(job) {
    const { order, amount } = job.args;
    if (amount < 0) throw new NoRetryError(`charge: amount ${amount} is negative`); // retrying cannot help
    return { order, charged: amount };
  },
};

// Each handler says what it did: the SDK itself logs only outages and unreported outcomes.
const logged = Object.fromEntries(Object.entries(handlers).map(([kind, handle]) => [kind, async (job) => {
  try {
    const result = await handle(job);
    console.log(`completed ${kind} ${job.id} ${JSON.stringify(result)}`);
    return result;
  } catch (err) {
    console.log(`failed ${kind} ${job.id} (attempt ${job.attempt}/${job.maxAttempts}): ${err.message}`);
    throw err;
  }
}]));

const worker = new Worker({
  url: process.env.HOPPER_URL ?? "http://127.0.0.1:7070",
  apiKey: process.env.HOPPER_API_KEY,
  mode: opt.mode,
  concurrency: Number(opt.concurrency),
  queue: opt.queue,
  handlers: logged,
  logger: console,
});
worker.start();
console.error(`worker ${worker.name}: ${opt.mode} mode, queue ${opt.queue}, kinds ${Object.keys(handlers).join(", ")}`);

const hard = new AbortController();
let stopping = false;
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, async () => {
    if (stopping) return hard.abort();
    stopping = true;
    console.error(`worker: ${sig}: finishing ${worker.running} job(s) (again to stop at once)`);
    await worker.stop(AbortSignal.any([hard.signal, AbortSignal.timeout(10_000)]));
    console.error("worker: stopped");
  });
}
