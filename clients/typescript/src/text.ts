import type { InputLimits } from "./gen/hopper/v1/hopper_pb.js";

// The server refuses text that is not UTF-8, holds a NUL byte or is longer than a field takes.
// A worker cannot refuse its handler's error message, so it makes such text fit instead:
// a refused outcome would leave the job running until its lease expires.

/**
 * Limits are the bounds the server puts on what a worker reports, in UTF-8 bytes (the error
 * code: characters, all ASCII) and milliseconds. The worker reads them from the server when
 * it starts (ServerService.Info, ServerInfo.inputLimits) and makes what it reports fit them.
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

/** builtInLimits apply until the server has said its own, and with a server that predates them. */
export const builtInLimits: Readonly<Limits> = {
  errorBytes: 64 << 10, reasonBytes: 4 << 10, progressMessageBytes: 4 << 10, errorCodeLen: 128,
  runAtFutureMs: 5 * 365 * 24 * 3600_000,
};

/** limitsOf is what a server served: each limit it left out (0, unset) is the built-in one. */
export function limitsOf(served: InputLimits | undefined): Limits {
  const ms = served?.maxRunAtFuture ? Number(served.maxRunAtFuture.seconds) * 1000 + Math.floor(served.maxRunAtFuture.nanos / 1e6) : 0;
  return {
    errorBytes: served?.maxErrorBytes || builtInLimits.errorBytes,
    reasonBytes: served?.maxReasonBytes || builtInLimits.reasonBytes,
    progressMessageBytes: served?.maxProgressMessageBytes || builtInLimits.progressMessageBytes,
    errorCodeLen: served?.maxErrorCodeLen || builtInLimits.errorCodeLen,
    runAtFutureMs: ms || builtInLimits.runAtFutureMs,
  };
}

/**
 * errorCodeProblem says, as the server would, why code is not a business error code (1 to
 * limits.errorCodeLen letters, digits, "_", "-", ".", ":"); undefined when it is one.
 */
export function errorCodeProblem(code: string, limits: Limits = builtInLimits): string | undefined {
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
