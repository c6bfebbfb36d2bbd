// Durations in this package are milliseconds (numbers), as setTimeout's are; on the wire they
// are google.protobuf.Duration and Timestamp.

import { durationFromMs, durationMs, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Duration, Timestamp } from "@bufbuild/protobuf/wkt";

/** toDuration is ms as a Duration; undefined stays unset. */
export function toDuration(ms: number | undefined): Duration | undefined {
  return ms === undefined ? undefined : durationFromMs(ms);
}

/** fromDuration is d in milliseconds; unset is undefined. */
export function fromDuration(d: Duration | undefined): number | undefined {
  return d === undefined ? undefined : durationMs(d);
}

/** toTimestamp is date as a Timestamp; undefined stays unset. */
export function toTimestamp(date: Date | undefined): Timestamp | undefined {
  return date === undefined ? undefined : timestampFromDate(date);
}

/** fromTimestamp is t as a Date; unset is undefined. */
export function fromTimestamp(t: Timestamp | undefined): Date | undefined {
  return t === undefined ? undefined : timestampDate(t);
}

/** formatMs renders a duration for messages: "250ms", "30s", "1.5s". */
export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)}ms` : `${+(ms / 1000).toFixed(3)}s`;
}
