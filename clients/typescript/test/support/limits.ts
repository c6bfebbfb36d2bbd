// Input limits for the unit tests, which run without a server to serve them: a test's own
// values (those of a default server), not limits of the SDK.

import type { Limits } from "../../src/text.js";

export const testLimits: Readonly<Limits> = {
  errorBytes: 64 << 10, reasonBytes: 4 << 10, progressMessageBytes: 4 << 10, errorCodeLen: 128,
  runAtFutureMs: 5 * 365 * 24 * 3600_000,
};
