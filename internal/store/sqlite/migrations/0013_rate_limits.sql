-- Rate limits (docs/flow-control.md#rate-limits): at most rate_limit job starts per
-- rate_period_us microseconds for a queue or a kind. Each is a token bucket kept in the row it
-- limits: rate_tokens starts the claim could take at rate_at (µs since the epoch; at most
-- rate_limit), refilled at rate_limit per period. The claim, in its write transaction, refills
-- the bucket to its own time, takes at most the whole tokens and writes back what is left. All
-- four columns are NULL when no rate is set. A kinds row is kept while it holds a rate, as for
-- a cap.
ALTER TABLE queues ADD COLUMN rate_limit INTEGER;
ALTER TABLE queues ADD COLUMN rate_period_us INTEGER;
ALTER TABLE queues ADD COLUMN rate_tokens REAL;
ALTER TABLE queues ADD COLUMN rate_at INTEGER;
ALTER TABLE kinds ADD COLUMN rate_limit INTEGER;
ALTER TABLE kinds ADD COLUMN rate_period_us INTEGER;
ALTER TABLE kinds ADD COLUMN rate_tokens REAL;
ALTER TABLE kinds ADD COLUMN rate_at INTEGER;
