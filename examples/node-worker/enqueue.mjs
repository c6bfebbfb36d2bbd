#!/usr/bin/env node
// enqueue.mjs: enqueues a mix of resize and charge jobs in one JobService/EnqueueBatch call.
//
//   node enqueue.mjs [--resize N] [--charge N] [--bad N] [--queue Q] [--json]
//
// --resize N resize jobs, --charge N charge jobs with a positive amount and --bad N charge
// jobs with a negative amount (worker.mjs fails those for good). Args vary with each job's
// number, so a run is reproducible. It prints one line per job, or with --json one JSON
// object per line: {"id", "kind", "args"} (args as the JSON string the job holds).
//
// HOPPER_URL and HOPPER_API_KEY (with the "enqueue" scope) as for worker.mjs.

import { parseArgs } from 'node:util';
import { enqueueBatch } from './hopper.mjs';

const { values: opt } = parseArgs({
  options: {
    resize: { type: 'string', default: '6' },
    charge: { type: 'string', default: '2' },
    bad: { type: 'string', default: '2' },
    queue: { type: 'string', default: 'default' },
    json: { type: 'boolean', default: false },
  },
});
const count = (name) => {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`enqueue: --${name} wants a whole number, got ${opt[name]}`);
    process.exit(2);
  }
  return n;
};

const specs = [];
for (let i = 0; i < count('resize'); i++) {
  const args = { image: `photo-${i}.jpg`, width: 640 + 320 * i, height: 480 + 135 * i, percent: [50, 25, 75, 33][i % 4] };
  specs.push({ kind: 'resize', queue: opt.queue, args });
}
for (let i = 0; i < count('charge'); i++) {
  specs.push({ kind: 'charge', queue: opt.queue, args: { order: 1000 + i, amount: 1999 + 500 * i } });
}
for (let i = 0; i < count('bad'); i++) {
  specs.push({ kind: 'charge', queue: opt.queue, args: { order: 2000 + i, amount: -(100 + 25 * i) } });
}
if (specs.length === 0) {
  console.error('enqueue: nothing to enqueue');
  process.exit(2);
}

try {
  const jobs = await enqueueBatch(specs);
  for (const job of jobs) {
    if (opt.json) console.log(JSON.stringify({ id: job.id, kind: job.kind, args: job.args }));
    else console.log(`enqueued ${job.kind} ${job.id} ${job.args}`);
  }
} catch (err) {
  console.error(`enqueue: ${err.message}`);
  process.exit(1);
}
