import type { Logger } from "./logger.js";
import { formatMs } from "./time.js";

/**
 * RetryPolicy shapes the wait between tries: min(cap, base·multiplierⁿ⁻¹) ± jitter·delay, in
 * milliseconds. For a job's retries the server merges policies field by field: the job's own
 * first, then its kind's (HandlerOptions.retryPolicy), then the server's default.
 */
export interface RetryPolicy {
  base?: number;
  multiplier?: number;
  cap?: number;
  /** A fraction: 0.1 is ±10 %; negative disables jitter. */
  jitter?: number;
  /**
   * retryBusinessErrors retries a BusinessError like any other error while attempts are left,
   * instead of failing the job at once; the code is still kept with each attempt and as the
   * job's lastErrorCode. True in the job's, the kind's or the server's policy retries: false
   * cannot undo another level's true.
   */
  retryBusinessErrors?: boolean;
}

/** The backoff of a RetryPolicy with every field set. */
export type FullPolicy = Required<Omit<RetryPolicy, "retryBusinessErrors">>;

/** The backoff of a worker's stream and polls, as the Go worker's: 100 ms doubling to 5 s, ±20 %. */
export const workPolicy: FullPolicy = { base: 100, multiplier: 2, cap: 5000, jitter: 0.2 };

/** The backoff of other loops that call the server (lease renewals): 100 ms doubling to 30 s, ±20 %. */
export const loopPolicy: FullPolicy = { base: 100, multiplier: 2, cap: 30_000, jitter: 0.2 };

/** backoffDelay is the wait after failed try n (n ≥ 1) under p; a jitter of 0 or less adds none. */
export function backoffDelay(p: FullPolicy, n: number, random: () => number = Math.random): number {
  let d = p.base * p.multiplier ** (Math.max(n, 1) - 1);
  if (!(d < p.cap)) d = p.cap; // also Infinity and NaN
  if (p.jitter > 0) d += d * p.jitter * (2 * random() - 1);
  return Math.max(d, 0);
}

/** How often a loop that keeps failing says so again. */
const remindEvery = 60_000;

/**
 * Tracker spaces the tries of a loop whose calls fail and logs when an outage starts, once a
 * minute while it lasts, and when it ends, rather than once per try.
 */
export class Tracker {
  private failures = 0;
  private since = 0;
  private reminded = 0;

  constructor(
    private readonly name: string,
    private readonly policy: FullPolicy,
    private readonly log: Logger,
    private readonly attrs: Record<string, unknown> = {},
  ) {}

  /** fail records a failed try and returns how long to wait before the next. */
  fail(err: unknown): number {
    const now = Date.now();
    this.failures++;
    const wait = backoffDelay(this.policy, this.failures);
    if (this.failures === 1) {
      this.since = this.reminded = now;
      this.log.warn(`${this.name} failed; retrying with backoff`, { ...this.attrs, err: String(err), retryIn: formatMs(wait) });
    } else if (now - this.reminded >= remindEvery) {
      this.reminded = now;
      this.log.warn(`${this.name} still failing`, { ...this.attrs, err: String(err), failures: this.failures, since: new Date(this.since) });
    }
    return wait;
  }

  /** succeed records a try that worked: the backoff starts over, and a recovery is logged. */
  succeed(): void {
    if (this.failures === 0) return;
    this.log.info(`${this.name} recovered`, { ...this.attrs, failures: this.failures, outage: formatMs(Date.now() - this.since) });
    this.failures = 0;
  }
}
