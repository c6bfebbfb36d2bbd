// examples/node-worker, run as its README says, against a server with an API key.

import * as assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client } from "../src/index.js";
import { eventually, serverFor } from "./support/fixture.js";

/** The example's directory, from build/test/ or test/. */
function exampleDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "examples", "node-worker", "worker.mjs"))) return join(dir, "examples", "node-worker");
  }
  throw new Error("examples/node-worker not found");
}

describe("examples/node-worker", () => {
  const server = serverFor({ apiKey: true });

  test("enqueue.mjs and worker.mjs work jobs and stop on SIGTERM", async () => {
    const dir = exampleDir();
    if (!existsSync(join(dir, "node_modules"))) execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "ignore" });
    const env = { ...process.env, HOPPER_URL: server().url, HOPPER_API_KEY: server().apiKey };
    const queue = "example";
    const enqueued = execFileSync(process.execPath, ["enqueue.mjs", "--resize", "3", "--charge", "1", "--bad", "1", "--queue", queue], { cwd: dir, env }).toString();
    assert.equal(enqueued.trim().split("\n").length, 5, enqueued);

    const worker = spawn(process.execPath, ["worker.mjs", "--mode", "poll", "--queue", queue], { cwd: dir, env });
    let out = "";
    worker.stdout.on("data", (b: Buffer) => (out += b));
    worker.stderr.on("data", (b: Buffer) => (out += b));
    const exited = new Promise<number | null>((r) => worker.once("exit", r));
    const c = new Client({ url: server().url, apiKey: server().apiKey });
    const ended = async () => (await c.list({ queues: [queue], states: ["completed", "failed"] })).jobs.length;
    await eventually(async () => (await ended()) === 5, `5 jobs to end; the worker said:\n${out}`);
    worker.kill("SIGTERM");
    assert.equal(await exited, 0, out);

    assert.equal(out.match(/^completed resize /gm)?.length, 3, out);
    assert.match(out, /^completed charge \S+ \{"order":1000,"charged":1999\}$/m);
    assert.match(out, /^failed charge \S+ \(attempt 1\/25\): charge: amount -100 is negative$/m);
    assert.match(out, /^worker: stopped$/m);
    const failed = await c.list({ queues: [queue], states: ["failed"] });
    assert.equal(failed.jobs[0]?.lastError, "not retryable: charge: amount -100 is negative");
  });
});
