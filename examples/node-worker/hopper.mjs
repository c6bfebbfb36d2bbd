// hopper.mjs: a tiny Hopper client for Node 20+, with no dependencies: the built-in fetch
// and web streams speak Hopper's Connect API as plain JSON over HTTP.
//
//   POST {url}/hopper.v1.<Service>/<Method>, Content-Type: application/json, body: the request
//   message as protojson (lowerCamelCase fields, durations as "30s", int64 as strings).
//
// Server streaming (WorkerService/StreamJobs) uses the Connect streaming protocol: the
// request is one enveloped message (Content-Type: application/connect+json) and the response
// a sequence of envelopes, each 1 byte of flags, a 4-byte big-endian length and a JSON
// payload; flag 0x02 marks the end-of-stream message, which may carry an error.
//
// Every function takes an optional last argument {url, apiKey, signal}: url defaults to
// $HOPPER_URL or http://127.0.0.1:7070, apiKey to $HOPPER_API_KEY (sent as
// "Authorization: Bearer <key>" when set), and signal aborts the request.
//
// Payloads: Hopper carries args and results as JSON *strings*. enqueue/enqueueBatch and
// complete take plain JavaScript values and stringify them; jobs come back with args as the
// string the server holds (JSON.parse it). Lease tokens are int64: they arrive as strings and
// are sent back as strings, so no precision is lost.

export const DEFAULT_URL = 'http://127.0.0.1:7070';

const FLAG_COMPRESSED = 0x01;
const FLAG_END_STREAM = 0x02;

/** HopperError is an error the server answered with; code is Connect's (e.g. "not_found"). */
export class HopperError extends Error {
  constructor(code, message, status) {
    super(`${code}: ${message}`);
    this.name = 'HopperError';
    this.code = code;
    this.status = status;
    this.rawMessage = message;
  }
}

function baseUrl(opts) {
  return (opts.url ?? process.env.HOPPER_URL ?? DEFAULT_URL).replace(/\/+$/, '');
}

function headers(opts, contentType) {
  const h = { 'Content-Type': contentType, 'Connect-Protocol-Version': '1' };
  const key = opts.apiKey ?? process.env.HOPPER_API_KEY;
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

/** errorFrom turns a non-200 answer into a HopperError, reading its JSON {code, message}. */
async function errorFrom(res) {
  const text = await res.text().catch(() => '');
  try {
    const e = JSON.parse(text);
    if (e && typeof e.code === 'string') return new HopperError(e.code, e.message ?? '', res.status);
  } catch {
    // not JSON: fall through
  }
  return new HopperError(codeForStatus(res.status), text.trim() || res.statusText, res.status);
}

// codeForStatus is Connect's mapping of HTTP statuses without a JSON error body to codes.
function codeForStatus(status) {
  return (
    {
      400: 'internal', 401: 'unauthenticated', 403: 'permission_denied', 404: 'unimplemented',
      408: 'deadline_exceeded', 413: 'resource_exhausted', 429: 'unavailable', 502: 'unavailable',
      503: 'unavailable', 504: 'unavailable',
    }[status] ?? 'unknown'
  );
}

/**
 * call makes one unary call and returns the response message. It throws a HopperError with
 * .code when the server answers with an error.
 *
 *   await call('JobService', 'Get', { id })
 */
export async function call(service, method, body = {}, opts = {}) {
  const res = await fetch(`${baseUrl(opts)}/hopper.v1.${service}/${method}`, {
    method: 'POST',
    headers: headers(opts, 'application/json'),
    body: JSON.stringify(body),
    signal: opts.signal,
  });
  if (!res.ok) throw await errorFrom(res);
  return res.json();
}

/** envelope frames one message for a Connect streaming request. */
export function envelope(message, flags = 0) {
  const payload = new TextEncoder().encode(JSON.stringify(message));
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.length, false);
  out.set(payload, 5);
  return out;
}

/**
 * parseEnvelopes reads Connect envelopes from an async iterable of byte chunks (a fetch
 * body), whatever the chunking: one envelope may span several chunks and one chunk may hold
 * several envelopes. It yields each message; at the end-of-stream message it returns, or
 * throws a HopperError when that message carries an error. A body that ends without the
 * end-of-stream message, or mid-envelope, throws too.
 */
export async function* parseEnvelopes(chunks) {
  const decoder = new TextDecoder();
  let buf = new Uint8Array(0);
  for await (const chunk of chunks) {
    buf = concat(buf, chunk);
    while (buf.length >= 5) {
      const flags = buf[0];
      const size = new DataView(buf.buffer, buf.byteOffset, 5).getUint32(1, false);
      if (buf.length < 5 + size) break; // the rest of this envelope is in a later chunk
      const payload = buf.subarray(5, 5 + size);
      buf = buf.subarray(5 + size);
      if (flags & FLAG_COMPRESSED) {
        throw new HopperError('internal', 'compressed envelope, but no compression was asked for');
      }
      const msg = size === 0 ? {} : JSON.parse(decoder.decode(payload));
      if (flags & FLAG_END_STREAM) {
        if (msg.error) throw new HopperError(msg.error.code ?? 'unknown', msg.error.message ?? '');
        return;
      }
      yield msg;
    }
  }
  if (buf.length > 0) throw new HopperError('internal', `stream ended in the middle of an envelope (${buf.length} bytes left)`);
  throw new HopperError('internal', 'stream ended without an end-of-stream message');
}

function concat(a, b) {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/**
 * streamJobs opens WorkerService/StreamJobs and yields each job pushed to it (an
 * ActivatedJob: {id, kind, args, leaseToken, attempt, ...}). The server never holds more
 * unfinished jobs on the stream than req.credit; finish each with complete or fail. The
 * stream stays open until the server ends it, opts.signal aborts it (the generator then
 * returns quietly) or the loop consuming it stops (break/return); when it closes, the
 * server gives its unfinished jobs back to the queue at once.
 *
 *   for await (const job of streamJobs({ worker: 'w1', kinds: ['resize'], credit: 4 })) { ... }
 */
export async function* streamJobs(req, opts = {}) {
  // Our own controller, so that leaving the loop early also closes the connection.
  const ac = new AbortController();
  const onAbort = () => ac.abort(opts.signal.reason);
  if (opts.signal?.aborted) return;
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let res;
    try {
      res = await fetch(`${baseUrl(opts)}/hopper.v1.WorkerService/StreamJobs`, {
        method: 'POST',
        headers: headers(opts, 'application/connect+json'),
        body: envelope(req),
        signal: ac.signal,
      });
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    if (!res.ok) throw await errorFrom(res);
    try {
      for await (const msg of parseEnvelopes(res.body)) {
        if (msg.job) yield msg.job;
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    ac.abort(); // a no-op once the body is read; else closes the stream
  }
}

/**
 * activate claims up to req.maxJobs jobs (WorkerService/Activate), waiting up to
 * req.requestTimeout (e.g. "10s") for the first one. It returns an array, empty when none
 * came in time.
 */
export async function activate(req, opts = {}) {
  const res = await call('WorkerService', 'Activate', req, opts);
  return res.jobs ?? [];
}

/** complete ends an attempt successfully; result (any JSON value, optional) is stored. */
export async function complete(id, leaseToken, result, opts = {}) {
  const body = { id, leaseToken: String(leaseToken) };
  if (result !== undefined) body.result = JSON.stringify(result);
  await call('WorkerService', 'Complete', body, opts);
}

/**
 * fail ends an attempt with an error. retries (optional) overrides the attempts left: 0
 * fails the job for good. retryBackoff (optional) is the wait before the retry: a duration
 * string ("5s", "0.25s") or a number of milliseconds. It returns {state, runAt}: state is
 * "scheduled" (to be retried) or "failed".
 */
export async function fail(id, leaseToken, error, { retries, retryBackoff, ...opts } = {}) {
  const body = { id, leaseToken: String(leaseToken), error: String(error) };
  if (retries !== undefined) body.retries = retries;
  if (retryBackoff !== undefined) body.retryBackoff = duration(retryBackoff);
  return call('WorkerService', 'Fail', body, opts);
}

/**
 * release hands a job the worker will not run back to its queue at once, without using an
 * attempt. A job a closed stream still holds counts as lost to a dead worker unless the worker
 * releases it (or reports on it) within 2 s of closing the stream.
 */
export async function release(id, leaseToken, reason = '', opts = {}) {
  await call('WorkerService', 'Release', { id, leaseToken: String(leaseToken), reason }, opts);
}

/** extendLease sets the lease to expire d ("30s" or milliseconds) from now. */
export async function extendLease(id, leaseToken, d, opts = {}) {
  return call('WorkerService', 'ExtendLease', { id, leaseToken: String(leaseToken), duration: duration(d) }, opts);
}

/** reportProgress stores a job's progress (0–100) and an optional message. */
export async function reportProgress(id, leaseToken, percent, message = '', opts = {}) {
  await call('WorkerService', 'ReportProgress', { id, leaseToken: String(leaseToken), percent, message }, opts);
}

/**
 * enqueueBatch stores several jobs in one transaction. Each spec is a JobSpec in protojson
 * ({kind, queue, priority, maxAttempts, delay: "5s", ...}) except that args is any JSON value,
 * stringified here. It returns the stored jobs.
 */
export async function enqueueBatch(specs, opts = {}) {
  const jobs = specs.map(jobSpec);
  const res = await call('JobService', 'EnqueueBatch', { jobs }, opts);
  return (res.results ?? []).map((r) => r.job);
}

/** enqueue stores one job (see enqueueBatch for spec) and returns it. */
export async function enqueue(spec, opts = {}) {
  const res = await call('JobService', 'Enqueue', { job: jobSpec(spec) }, opts);
  return res.job;
}

/** getJob returns one job as stored. */
export async function getJob(id, opts = {}) {
  const res = await call('JobService', 'Get', { id }, opts);
  return res.job;
}

function jobSpec({ args, ...rest }) {
  return args === undefined ? rest : { ...rest, args: JSON.stringify(args) };
}

// duration renders a protojson Duration: strings pass as they are, numbers are milliseconds.
function duration(d) {
  if (typeof d === 'string') return d;
  if (typeof d === 'number' && Number.isFinite(d) && d >= 0) return `${Math.round(d) / 1000}s`;
  throw new TypeError(`duration: want a string like "5s" or milliseconds, got ${d}`);
}
