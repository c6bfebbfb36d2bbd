// npm test: builds the hopper command once (unless $HOPPER_BIN names one), then runs every
// test file with node's test runner, two files at a time (each starts its own server).

import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { hopperBinary } from "./support/hopper-server.js";

const here = dirname(fileURLToPath(import.meta.url));
process.env.HOPPER_BIN = hopperBinary(mkdtempSync(join(tmpdir(), "hopper-bin-")));
const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : readdirSync(here).filter((f) => f.endsWith(".test.js")).map((f) => join(here, f));
const res = spawnSync(process.execPath, ["--test", "--test-concurrency=2", ...files], { stdio: "inherit" });
process.exit(res.status ?? 1);
