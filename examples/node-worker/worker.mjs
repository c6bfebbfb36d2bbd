#!/usr/bin/env node
// worker.mjs: a Hopper worker in plain JavaScript (Node 20+, no dependencies).
//
//   node worker.mjs [--mode stream|poll] [--max N] [--credit N] [--queue Q] [--worker NAME]
//
// It works two kinds of jobs:
//   resize  {width, height, percent} → completes with {width, height} scaled by percent
//           (rounded down)
//   charge  {order, amount}          → fails for good (no retry) when amount is negative,
//           else completes with {order, charged}
//
// --mode stream (the default) opens WorkerService/StreamJobs: the server pushes jobs, never
// more unfinished ones than --credit, and keeps their leases alive while the stream is open.
// --mode poll calls WorkerService/Activate in a loop, each call a long poll of up to 10 s for
// up to --credit jobs. Either way the jobs in hand run concurrently.
//
// It stops after --max jobs (0: no limit) or on SIGINT/SIGTERM: it takes no new job, lets
// the ones in hand finish and report, then closes the stream and releases the jobs pushed to
// it meanwhile (kept until then: released earlier, the server would push them straight back;
// not released at all, they would count as lost to a dead worker). A second signal exits at
// once.
//
// HOPPER_URL (default http://127.0.0.1:7070) names the server; HOPPER_API_KEY, when set, is
// sent as a bearer token (the key needs the "work" scope).
//
// Exit status: 0 when every job taken was reported (completed or failed), 1 otherwise.

import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { activate, complete, fail, HopperError, release, streamJobs } from './hopper.mjs';

/** PermanentError fails a job for good: retrying it cannot help. */
class PermanentError extends Error {}

// handlers maps each kind to a function of the job's args that returns its result or throws.
const handlers = {
  resize({ width, height, percent }) {
    for (const [name, v] of Object.entries({ width, height, percent })) {
      if (!Number.isInteger(v) || v <= 0) throw new PermanentError(`resize: ${name} must be a positive integer, got ${JSON.stringify(v)}`);
    }
    return { width: Math.floor((width * percent) / 100), height: Math.floor((height * percent) / 100) };
  },
  charge({ order, amount }) {
    if (typeof amount !== 'number' || !Number.isFinite(amount)) throw new PermanentError(`charge: amount must be a number, got ${JSON.stringify(amount)}`);
    if (amount < 0) throw new PermanentError(`charge: amount ${amount} is negative`);
    return { order, charged: amount };
  },
};

const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: 'stream' },
    max: { type: 'string', default: '0' },
    credit: { type: 'string', default: '4' },
    queue: { type: 'string', default: 'default' },
    worker: { type: 'string', default: `node-${hostname()}-${process.pid}` },
  },
});
const max = Number(opt.max);
const credit = Number(opt.credit);
if (!['stream', 'poll'].includes(opt.mode) || !Number.isInteger(max) || max < 0 || !Number.isInteger(credit) || credit < 1) {
  console.error('usage: node worker.mjs [--mode stream|poll] [--max N] [--credit N] [--queue Q] [--worker NAME]');
  process.exit(2);
}
const request = { worker: opt.worker, queue: opt.queue, kinds: Object.keys(handlers), leaseTimeout: '30s' };

const stats = { taken: 0, completed: 0, failed: 0, retried: 0, unreported: 0 };
const inFlight = new Set();
const declined = []; // pushed after the worker began stopping: released once the stream is closed
const stop = new AbortController(); // aborts the stream or long poll once the worker stops
let stopping = false;

const reachedMax = () => max > 0 && stats.taken >= max;
const drain = () => Promise.allSettled([...inFlight]);

function shutdown(signal) {
  if (stopping) {
    console.error(`worker: ${signal} again, exiting now`);
    process.exit(130);
  }
  stopping = true;
  console.error(`worker: ${signal}: finishing ${inFlight.size} job(s) in hand, then stopping`);
  drain().then(() => stop.abort());
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);

// take starts working a job and tracks it until it is reported.
function take(job) {
  stats.taken++;
  const p = work(job).finally(() => inFlight.delete(p));
  inFlight.add(p);
}

async function work(job) {
  let result;
  let error;
  try {
    const handler = handlers[job.kind];
    if (!handler) throw new PermanentError(`no handler for kind ${job.kind}`);
    let args;
    try {
      args = JSON.parse(job.args || '{}');
    } catch (err) {
      throw new PermanentError(`args are not JSON: ${err.message}`);
    }
    result = await handler(args, job);
  } catch (err) {
    error = err;
  }
  try {
    if (error === undefined) {
      await complete(job.id, job.leaseToken, result);
      stats.completed++;
      console.log(`completed ${job.kind} ${job.id} ${JSON.stringify(result)}`);
      return;
    }
    // A permanent error fails the job now; anything else is retried after the job's backoff
    // while it has attempts left.
    const res = await fail(job.id, job.leaseToken, error.message, error instanceof PermanentError ? { retries: 0 } : {});
    if (res.state === 'failed') stats.failed++;
    else stats.retried++;
    console.log(`failed ${job.kind} ${job.id} (${res.state}): ${error.message}`);
  } catch (err) {
    // failed_precondition: the lease was lost (the job was canceled, or its stream closed).
    stats.unreported++;
    console.error(`worker: could not report ${job.kind} ${job.id}: ${err.message}`);
  }
}

// retryable tells errors worth reconnecting after (the server restarting, a limit) from
// those that will not go away (a bad key, a bad request). A server shutting down answers
// waiting long polls with "canceled".
const retryableCodes = ['unavailable', 'resource_exhausted', 'canceled', 'aborted', 'deadline_exceeded', 'internal', 'unknown'];
function retryable(err) {
  if (err instanceof HopperError) return retryableCodes.includes(err.code);
  return true; // network errors: fetch failed, connection reset
}

let backoff = 250;
async function pause(err) {
  console.error(`worker: ${err.message}${err.cause ? ` (${err.cause.message ?? err.cause})` : ''}; retrying in ${backoff} ms`);
  await new Promise((resolve) => setTimeout(resolve, backoff));
  backoff = Math.min(backoff * 2, 10_000);
}

async function runStream() {
  while (!stopping && !reachedMax()) {
    try {
      for await (const job of streamJobs({ ...request, credit }, { signal: stop.signal })) {
        backoff = 250;
        if (stopping) { // not started: released once the stream is closed
          declined.push(job);
          continue;
        }
        take(job);
        if (reachedMax()) {
          await drain(); // closing the stream before reporting would give the jobs back
          break;
        }
      }
      // The server ended the stream (it is shutting down, say): open another after a pause.
      if (!stopping && !reachedMax()) await pause(new Error('the server ended the stream'));
    } catch (err) {
      if (!retryable(err)) throw err;
      await drain();
      if (!stopping) await pause(err);
    }
  }
}

async function runPoll() {
  while (!stopping && !reachedMax()) {
    const maxJobs = max > 0 ? Math.min(credit, max - stats.taken) : credit;
    let jobs;
    try {
      jobs = await activate({ ...request, maxJobs, requestTimeout: '10s' }, { signal: stop.signal });
      backoff = 250;
    } catch (err) {
      if (stopping) break;
      if (!retryable(err)) throw err;
      await pause(err);
      continue;
    }
    for (const job of jobs) take(job);
    await drain();
  }
}

// releaseDeclined gives back the jobs pushed while stopping, now that the stream is closed.
async function releaseDeclined() {
  const jobs = declined.splice(0);
  await Promise.allSettled(jobs.map((job) => release(job.id, job.leaseToken, 'worker stopping')
    .catch((err) => console.error(`worker: could not release ${job.id}: ${err.message}`))));
}

console.error(`worker ${opt.worker}: ${opt.mode} mode on ${process.env.HOPPER_URL ?? 'http://127.0.0.1:7070'}, queue ${opt.queue}, kinds ${request.kinds.join(', ')}, credit ${credit}${max ? `, max ${max}` : ''}`);
let status = 0;
try {
  await (opt.mode === 'stream' ? runStream() : runPoll());
} catch (err) {
  console.error(`worker: ${err.message}`);
  status = 1;
}
await drain();
await releaseDeclined();
console.error(`worker: ${stats.taken} job(s) taken: ${stats.completed} completed, ${stats.failed} failed, ${stats.retried} to be retried, ${stats.unreported} not reported`);
process.exit(status || (stats.unreported > 0 ? 1 : 0));
