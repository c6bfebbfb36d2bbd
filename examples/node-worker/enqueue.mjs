#!/usr/bin/env node
// enqueue.mjs: enqueues a mix of resize and charge jobs in one call, with the SDK.
//
//   node enqueue.mjs [--resize N] [--charge N] [--bad N] [--slow SECONDS] [--queue Q]
//
// --bad N charge jobs have a negative amount, which worker.mjs fails for good. --slow adds one
// resize job that takes that many seconds. HOPPER_URL and HOPPER_API_KEY (a key with the
// enqueue scope) as for worker.mjs.

import { parseArgs } from "node:util";
import { Client } from "@hopperjobs/hopper";

const { values: opt } = parseArgs({
  options: {
    resize: { type: "string", default: "6" },
    charge: { type: "string", default: "2" },
    bad: { type: "string", default: "2" },
    slow: { type: "string" },
    queue: { type: "string", default: "default" },
  },
});
const { queue } = opt;

const jobs = [];
for (let i = 0; i < Number(opt.resize); i++) {
  jobs.push({ kind: "resize", queue, args: { image: `photo-${i}.jpg`, width: 640 + 320 * i, height: 480 + 135 * i, percent: [50, 25, 75, 33][i % 4] } });
}
for (let i = 0; i < Number(opt.charge); i++) jobs.push({ kind: "charge", queue, args: { order: 1000 + i, amount: 1999 + 500 * i } });
for (let i = 0; i < Number(opt.bad); i++) jobs.push({ kind: "charge", queue, args: { order: 2000 + i, amount: -(100 + 25 * i) } });
if (opt.slow) jobs.push({ kind: "resize", queue, args: { image: "poster.tiff", width: 9000, height: 6000, percent: 10, seconds: Number(opt.slow) } });

const client = new Client({ url: process.env.HOPPER_URL ?? "http://127.0.0.1:7070", apiKey: process.env.HOPPER_API_KEY });
try {
  for (const { job } of await client.enqueueMany(jobs)) console.log(`enqueued ${job.kind} ${job.id} ${JSON.stringify(job.args)}`);
} catch (err) {
  console.error(`enqueue: ${err.message}`); // a HopperError: err.code, err.field
  process.exit(1);
}
