import { NoLimitsError } from "./errors.js";
import type { InputLimits } from "./gen/hopper/v1/hopper_pb.js";

// The server refuses text that is not UTF-8, holds a NUL byte or is longer than a field takes.
// A worker cannot refuse its handler's error message, so it makes such text fit instead:
// a refused outcome would leave the job running until its lease expires.

/**
 * Limits are the bounds the server puts on what a worker reports, in UTF-8 bytes (the error
 * code: characters, all ASCII) and milliseconds. The worker reads them from the server when
 * it starts (ServerService.Info, ServerInfo.inputLimits), takes no job before, and makes what
 * it reports fit them. It has no limits of its own.
 */
export interface Limits {
  /** errorBytes bounds the error text (and stack) of a failed attempt. */
  errorBytes: number;
  /** reasonBytes bounds a release's reason. */
  reasonBytes: number;
  /** progressMessageBytes bounds a progress message. */
  progressMessageBytes: number;
  /** errorCodeLen bounds a business error's code. */
  errorCodeLen: number;
  /** runAtFutureMs bounds a delay, and how far ahead a time may be. */
  runAtFutureMs: number;
}

/**
 * limitsOf is what the server at url served (ServerInfo.inputLimits). It throws a NoLimitsError
 * when the server served none, or left out (0, unset) a limit the worker needs.
 */
export function limitsOf(served: InputLimits | undefined, url: string): Limits {
  if (!served) throw new NoLimitsError(url);
  const ms = served.maxRunAtFuture ? Number(served.maxRunAtFuture.seconds) * 1000 + Math.floor(served.maxRunAtFuture.nanos / 1e6) : 0;
  const limits: Limits = {
    errorBytes: served.maxErrorBytes, reasonBytes: served.maxReasonBytes, progressMessageBytes: served.maxProgressMessageBytes,
    errorCodeLen: served.maxErrorCodeLen, runAtFutureMs: ms,
  };
  const names: Record<keyof Limits, string> = {
    errorBytes: "max_error_bytes", reasonBytes: "max_reason_bytes", progressMessageBytes: "max_progress_message_bytes",
    errorCodeLen: "max_error_code_len", runAtFutureMs: "max_run_at_future",
  };
  for (const [k, name] of Object.entries(names)) {
    if (!(limits[k as keyof Limits] > 0)) throw new NoLimitsError(url, name);
  }
  return limits;
}

/**
 * errorCodeProblem says, as the server would, why code is not a business error code (1 to
 * limits.errorCodeLen letters, digits, "_", "-", ".", ":"); undefined when it is one.
 */
export function errorCodeProblem(code: string, limits: Limits): string | undefined {
  const max = limits.errorCodeLen;
  if (code === "" || code.length > max) return `invalid error_code: ${JSON.stringify(code)} must be 1–${max} characters`;
  if (!/^[A-Za-z0-9_.:-]+$/.test(code)) return `invalid error_code: ${JSON.stringify(code)}: only letters, digits, '_', '-', '.' and ':' are allowed`;
  return undefined;
}

const ellipsis = "…";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * clipText makes s fit a field of limit UTF-8 bytes: lone surrogates and NUL become U+FFFD,
 * and longer text is cut at a character boundary, ending with "…".
 */
export function clipText(s: string, limit: number): string {
  s = s.toWellFormed().replaceAll("\0", "\uFFFD");
  const bytes = encoder.encode(s);
  if (bytes.length <= limit) return s;
  const room = limit - encoder.encode(ellipsis).length;
  if (room < 1) return decoder.decode(bytes.subarray(0, cut(bytes, Math.max(limit, 0))));
  return decoder.decode(bytes.subarray(0, cut(bytes, room))) + ellipsis;
}

// cut moves n back to the start of a UTF-8 sequence.
function cut(bytes: Uint8Array, n: number): number {
  while (n > 0 && ((bytes[n] ?? 0) & 0xc0) === 0x80) n--;
  return n;
}
