/**
 * Logger receives what a worker has to say: Warn when an outage starts (once, not per retry)
 * and Error when an operator must act. console fits it (`logger: console`); the default
 * discards everything.
 */
export interface Logger {
  debug(message: string, attrs?: Record<string, unknown>): void;
  info(message: string, attrs?: Record<string, unknown>): void;
  warn(message: string, attrs?: Record<string, unknown>): void;
  error(message: string, attrs?: Record<string, unknown>): void;
}

const discard = () => {};

/** silent is the Logger that discards everything. */
export const silent: Logger = { debug: discard, info: discard, warn: discard, error: discard };
