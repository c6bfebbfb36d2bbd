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

/**
 * formatMs renders a duration as Go prints one ("250ms", "1.5s", "1m30s", "2h0m0s"), so that
 * messages read the same from every worker.
 */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 0) return `-${formatMs(-ms)}`;
  if (ms === 0) return "0s";
  if (ms < 0.001) return `${trim(ms * 1e6)}ns`;
  if (ms < 1) return `${trim(ms * 1e3)}µs`;
  if (ms < 1000) return `${trim(ms)}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = `${trim((ms % 60_000) / 1000)}s`;
  if (h > 0) return `${h}h${m}m${s}`;
  return m > 0 ? `${m}m${s}` : s;
}

/** trim is n with at most 6 decimals and no trailing zeros. */
function trim(n: number): string {
  return String(+n.toFixed(6));
}
