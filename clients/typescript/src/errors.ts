import { Code, ConnectError } from "@connectrpc/connect";

/**
 * HopperError is an error the server answered with, or a call that could not reach it. code
 * is the Connect code (Code.NotFound, Code.FailedPrecondition, …); field is the request field
 * an INVALID_ARGUMENT answer named ("queue", "idempotency_key"), when it named one; requestId
 * is the X-Request-Id of the answer, to quote from the server's log.
 */
export class HopperError extends Error {
  override readonly name: string = "HopperError";
  /** The Connect code. */
  readonly code: Code;
  /** The server's message, without the code. */
  readonly rawMessage: string;
  /** The request field the server named as invalid, if any. */
  readonly field: string | undefined;
  /** The answer's request id, if it had one. */
  readonly requestId: string | undefined;

  constructor(code: Code, rawMessage: string, options?: { cause?: unknown; requestId?: string }) {
    super(`[${codeName(code)}] ${rawMessage}`, { cause: options?.cause });
    this.code = code;
    this.rawMessage = rawMessage;
    this.field = code === Code.InvalidArgument ? fieldOf(rawMessage) : undefined;
    this.requestId = options?.requestId || undefined;
  }
}

/**
 * NoLimitsError is why a worker stopped taking jobs when its server serves no input limits
 * (ServerService.Info without ServerInfo.inputLimits, or without a limit the worker makes its
 * reports fit): such a server predates the limits, or is not a Hopper server. The worker takes
 * its limits only from its server, so it takes no job from this one (Worker.error). Its code
 * is Unimplemented: the server does not do what the worker needs.
 */
export class NoLimitsError extends HopperError {
  override readonly name: string = "NoLimitsError";
  /** url is the server's. */
  readonly url: string;
  /** limit names the limit the server left out ("max_error_bytes"); undefined when it serves none. */
  readonly limit: string | undefined;

  constructor(url: string, limit?: string, options?: { cause?: unknown }) {
    const cause = options?.cause instanceof Error ? `: ${options.cause.message}` : "";
    super(Code.Unimplemented, `the server at ${url} serves ${limit ? `no input limit ${limit}` : "no input limits"} (ServerService.Info): upgrade it${cause}`, options);
    this.url = url;
    this.limit = limit;
  }
}

/** codeName is Connect's name of code: "not_found", "failed_precondition", … */
export function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/[A-Z]/g, (c, i: number) => (i > 0 ? "_" : "") + c.toLowerCase());
}

// The server says "invalid <field>: <reason>", perhaps after what it was doing ("job 2: ").
const invalidField = /(?:^|: )invalid ([a-z_][a-z0-9_.[\]]*): /;

function fieldOf(message: string): string | undefined {
  return invalidField.exec(message)?.[1];
}

/** toHopperError turns anything a call threw into a HopperError (a lost connection is Unavailable). */
export function toHopperError(err: unknown): HopperError {
  if (err instanceof HopperError) return err;
  const ce = ConnectError.from(err);
  const code = connectionLost(ce) ? Code.Unavailable : ce.code;
  const message = code === ce.code ? ce.rawMessage : `connection to the server lost: ${ce.rawMessage}`;
  return new HopperError(code, message, { cause: err, requestId: ce.metadata.get("x-request-id") ?? undefined });
}

/**
 * isRefusal reports whether err is the server refusing the caller's credentials (no key where
 * one is required, a bad or revoked key, a key without the scope): asking again cannot help.
 */
export function isRefusal(err: HopperError): boolean {
  return err.code === Code.Unauthenticated || err.code === Code.PermissionDenied;
}

// The codes a broken connection reaches a caller with: connect-node says Internal or Unknown
// for a stream cut mid-message, Aborted for a reset, Canceled for an HTTP/2 stream the dying
// server's connection took down with it.
const lossCodes = new Set([Code.Internal, Code.Unknown, Code.Aborted, Code.Canceled]);

// Node's error codes of a connection that broke rather than answered.
const lossErrors = new Set([
  "ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH",
  "ERR_STREAM_PREMATURE_CLOSE", "ERR_HTTP2_STREAM_ERROR", "ERR_HTTP2_SESSION_ERROR",
  "ERR_HTTP2_GOAWAY_SESSION", "ERR_HTTP2_STREAM_CANCEL", "ERR_HTTP2_INVALID_SESSION", "ERR_STREAM_DESTROYED",
]);

/**
 * connectionLost reports whether err says the connection to the server broke (a server that
 * crashed or restarted mid-call) rather than the server answered: such an error is retried
 * as Unavailable.
 */
export function connectionLost(err: ConnectError): boolean {
  if (!lossCodes.has(err.code)) return false;
  if (/premature close|incomplete envelope|missing EndStreamResponse|socket hang up|other side closed|stream closed with error code/i.test(err.rawMessage)) {
    return true;
  }
  for (let e: unknown = err.cause, n = 0; e instanceof Error && n < 10; e = e.cause, n++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && lossErrors.has(code)) return true;
  }
  return false;
}
