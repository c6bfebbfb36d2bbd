// Payloads (args, results, checkpoints, resume data) travel as strings of JSON text; this
// package's API takes and returns plain values. These two functions are that edge.

/** encodeJSON is v as JSON text; undefined is "" (the field left unset). */
export function encodeJSON(v: unknown): string {
  return v === undefined ? "" : (JSON.stringify(v) ?? "");
}

/** decodeJSON is the value of JSON text s; "" (an unset field) is undefined. */
export function decodeJSON<T = unknown>(s: string): T | undefined {
  return s === "" ? undefined : (JSON.parse(s) as T);
}
