// The poll loop asks for as many jobs as it has free slots; a slot is free once its handler
// returns; with few free it waits a moment (2 ms) to gather more.

import * as assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import { loopPolicy, Tracker } from "../src/backoff.js";
import { ActivatedJobSchema, ActivateRequestSchema, ActivateResponseSchema } from "../src/gen/hopper/v1/hopper_pb.js";
import type { ActivateRequest, WorkerService } from "../src/gen/hopper/v1/hopper_pb.js";
import { silent } from "../src/logger.js";
import { pollLoop } from "../src/poll-intake.js";
import { eventually } from "./support/fixture.js";

describe("pollLoop", () => {
  test("asks for the free slots, freed as handlers return, gathering a few when few are free", async () => {
    const asked: number[] = [];
    let next = 0;
    const api = {
      activate: async (req: ActivateRequest) => {
        asked.push(req.maxJobs);
        return create(ActivateResponseSchema, { jobs: Array.from({ length: req.maxJobs }, () => create(ActivatedJobSchema, { id: `j${next++}` })) });
      },
    } as unknown as RpcClient<typeof WorkerService>;
    const handled: (() => void)[] = [];
    const stop = new AbortController();
    const done = pollLoop({
      api, request: create(ActivateRequestSchema, {}), backoff: new Tracker("activate jobs", loopPolicy, silent), concurrency: 8,
      launch: (_jobs, h) => {
        handled.push(h);
        return true;
      },
      release: async () => {}, refused: () => {},
    }, stop.signal);

    await eventually(() => asked.length === 1, "the first poll");
    assert.deepEqual(asked, [8], "every slot free");
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(asked.length, 1, "no poll while every slot is busy");

    handled[0]!();
    await eventually(() => asked.length === 2, "a poll for the freed slot");
    assert.equal(asked[1], 1, "one slot freed and no other within 2 ms: one job");

    handled[1]!();
    handled[2]!();
    handled[2]!(); // a second call frees nothing more
    await eventually(() => asked.length === 3, "a poll for two slots");
    assert.equal(asked[2], 2, "a quarter of the slots free: asked at once");

    handled[3]!();
    setTimeout(() => handled[4]!(), 0); // within the moment
    await eventually(() => asked.length === 4, "a poll for the gathered slots");
    assert.equal(asked[3], 2, "the poll waited for a second free slot");
    stop.abort();
    await done;
  });
});
