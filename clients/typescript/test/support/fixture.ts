// What the tests share: a server per test file, a queue per test, and waiting for a job.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { Client, Worker } from "../../src/index.js";
import type { Job, WorkerOptions } from "../../src/index.js";
import { HopperServer, hopperBinary } from "./hopper-server.js";
import type { ServerOptions } from "./hopper-server.js";

let bin: string | undefined;

/**
 * serverFor starts a `hopper serve` before the tests of the suite it is called in, and kills
 * it after them; the returned function gives it to the tests.
 */
export function serverFor(opts: ServerOptions = {}): () => HopperServer {
  let s: HopperServer | undefined;
  before(async () => {
    bin ??= hopperBinary(mkdtempSync(join(tmpdir(), "hopper-bin-")));
    s = await HopperServer.start(bin, opts);
  });
  after(() => s?.close());
  return () => s!;
}

let queues = 0;

/** queueName is a queue no other test uses. */
export function queueName(test: string): string {
  return `${test.replace(/[^a-z0-9]+/gi, "-").slice(0, 40)}-${process.pid}-${++queues}`;
}

/** eventually polls check every 20 ms until it returns true, or fails after timeout ms. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeout = 10_000): Promise<void> {
  const deadline = Date.now() + timeout;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** gate is a promise the test opens. */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

/** waitForState waits until job id is in state and returns it. */
export async function waitForState(c: Client, id: string, state: Job["state"], timeout = 10_000): Promise<Job> {
  let job: Job | undefined;
  await eventually(async () => (job = await c.get(id)).state === state, `job ${id} to be ${state} (it is ${job?.state}, last error ${job?.lastError})`, timeout);
  return job!;
}

/**
 * startWorker starts a worker on s, stopped (hard) when the test ends unless the test stopped
 * it. Tests log nothing unless HOPPER_TEST_LOG is set.
 */
export function startWorker(s: HopperServer, opts: Omit<WorkerOptions, "url">, cleanup: (fn: () => Promise<void>) => void): Worker {
  const w = new Worker({ url: s.url, apiKey: s.apiKey, leaseDuration: 5000, pollWait: 1000, logger: process.env.HOPPER_TEST_LOG ? console : undefined, ...opts });
  w.start();
  cleanup(() => w.stop(AbortSignal.timeout(1000)));
  return w;
}
