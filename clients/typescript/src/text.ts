// The server refuses text that is not UTF-8, holds a NUL byte or is longer than a field takes.
// A worker cannot refuse its handler's error message, so it makes such text fit instead:
// a refused outcome would leave the job running until its lease expires.

/** The longest error text of a failed attempt, in UTF-8 bytes. */
export const MAX_ERROR_BYTES = 64 << 10;
/** The longest release reason, in UTF-8 bytes. */
export const MAX_REASON_BYTES = 4 << 10;
/** The longest progress message, in UTF-8 bytes. */
export const MAX_PROGRESS_MESSAGE_BYTES = 4 << 10;
/** The longest business error code, in bytes (its characters are ASCII). */
export const MAX_ERROR_CODE_LEN = 128;

/**
 * errorCodeProblem says, as the server would, why code is not a business error code (1–128
 * letters, digits, "_", "-", ".", ":"); undefined when it is one.
 */
export function errorCodeProblem(code: string): string | undefined {
  if (code === "" || code.length > MAX_ERROR_CODE_LEN) return `invalid error_code: ${JSON.stringify(code)} must be 1–${MAX_ERROR_CODE_LEN} characters`;
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
