import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { h2Transport } from "./h2-transport.js";

/** ConnectionOptions says how to reach `hopper serve`. Only url is required. */
export interface ConnectionOptions {
  /** url is the server's base URL, e.g. "http://127.0.0.1:7070". */
  url: string;
  /** apiKey is sent as "Authorization: Bearer <key>" with every call (default none). */
  apiKey?: string;
  /** protocol is Connect's own (default) or gRPC; both are served by `hopper serve`. */
  protocol?: "connect" | "grpc";
  /**
   * httpVersion is "2" (default: one connection carries every call; over http:// the server
   * speaks HTTP/2 without TLS) or "1.1" (for a proxy that only speaks HTTP/1.1; gRPC needs "2").
   */
  httpVersion?: "1.1" | "2";
  /** transport, when set, carries the calls and the options above are ignored (but url). */
  transport?: Transport;
}

/** bearer sends key as a bearer token with every call. */
export function bearer(key: string): Interceptor {
  return (next) => (req) => {
    req.header.set("Authorization", `Bearer ${key}`);
    return next(req);
  };
}

/** createTransport is the transport that options describe. */
export function createTransport(options: ConnectionOptions): Transport {
  if (options.transport) return options.transport;
  if (!options.url) throw new TypeError("hopper: ConnectionOptions.url is required");
  const interceptors = options.apiKey ? [bearer(options.apiKey)] : [];
  // Always the binary codec: payloads are strings of JSON text there, which the SDK encodes
  // and decodes itself.
  const common = { baseUrl: options.url, useBinaryFormat: true, interceptors };
  if (options.protocol === "grpc") return createGrpcTransport(common);
  if (options.protocol !== undefined && options.protocol !== "connect") {
    throw new TypeError(`hopper: unknown protocol ${JSON.stringify(options.protocol)}`);
  }
  const httpVersion = options.httpVersion ?? "2";
  const connect = createConnectTransport({ ...common, httpVersion });
  if (httpVersion !== "2") return connect;
  return h2Transport(options.url, options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}, connect);
}
