// Tests of hopper.mjs's Connect envelope parsing, with Node's built-in runner:
//
//   node --test hopper.test.mjs
//
// node_worker_test.go runs them too, before working jobs against a real server.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envelope, HopperError, parseEnvelopes } from './hopper.mjs';

async function* chunked(bytes, sizes) {
  let at = 0;
  for (const n of sizes) {
    yield bytes.subarray(at, at + n);
    at += n;
  }
  if (at < bytes.length) yield bytes.subarray(at);
}

function joined(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function collect(gen) {
  const out = [];
  for await (const m of gen) out.push(m);
  return out;
}

const jobs = [
  { job: { id: 'a', kind: 'resize', args: '{"width":10}', leaseToken: '1' } },
  { job: { id: 'b', kind: 'charge', args: '{"amount":-1, "note":"ünïcødé"}', leaseToken: '9007199254740993' } },
  { job: { id: 'c', kind: 'resize', args: '{}', leaseToken: '3' } },
];
const body = joined(...jobs.map((m) => envelope(m)), envelope({}, 0x02));

test('all envelopes in one chunk', async () => {
  assert.deepEqual(await collect(parseEnvelopes(chunked(body, [body.length]))), jobs);
});

test('every byte its own chunk', async () => {
  assert.deepEqual(await collect(parseEnvelopes(chunked(body, new Array(body.length).fill(1)))), jobs);
});

test('chunks across headers and payloads', async () => {
  for (const sizes of [[3], [4, 2], [7, 70, 1, 90], [5, 200]]) {
    assert.deepEqual(await collect(parseEnvelopes(chunked(body, sizes))), jobs, `chunk sizes ${sizes}`);
  }
});

test('end of stream with an error', async () => {
  const withError = joined(envelope(jobs[0]), envelope({ error: { code: 'unavailable', message: 'shutting down' } }, 0x02));
  const got = [];
  await assert.rejects(
    async () => {
      for await (const m of parseEnvelopes(chunked(withError, [9]))) got.push(m);
    },
    (err) => err instanceof HopperError && err.code === 'unavailable' && /shutting down/.test(err.message),
  );
  assert.deepEqual(got, [jobs[0]]);
});

test('a body cut short', async () => {
  await assert.rejects(collect(parseEnvelopes(chunked(body.subarray(0, 20), []))), /middle of an envelope/);
  await assert.rejects(collect(parseEnvelopes(chunked(envelope(jobs[0]), []))), /without an end-of-stream/);
});

test('nothing is read after the end of stream', async () => {
  const trailing = joined(envelope(jobs[0]), envelope({}, 0x02), envelope(jobs[1]));
  assert.deepEqual(await collect(parseEnvelopes(chunked(trailing, [2]))), [jobs[0]]);
});
