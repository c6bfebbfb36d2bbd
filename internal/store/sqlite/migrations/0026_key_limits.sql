-- Limits per key (docs/flow-control.md#limits-per-key): a queue or a kind may cap the running
-- jobs of each fairness key (cap_per_key) and rate-limit each key's starts (rate_per_key_limit
-- per rate_per_key_period_us microseconds). Both apply to keyed jobs only, which the fair claim
-- takes (claim.go, fair.go).
ALTER TABLE queues ADD COLUMN cap_per_key INTEGER;
ALTER TABLE queues ADD COLUMN rate_per_key_limit INTEGER;
ALTER TABLE queues ADD COLUMN rate_per_key_period_us INTEGER;
ALTER TABLE kinds ADD COLUMN cap_per_key INTEGER;
ALTER TABLE kinds ADD COLUMN rate_per_key_limit INTEGER;
ALTER TABLE kinds ADD COLUMN rate_per_key_period_us INTEGER;

-- The running keyed jobs by key: a claim counts the running jobs of the keys it reads here.
-- Unkeyed jobs are not in it, so they pay nothing for it.
CREATE INDEX jobs_running_keyed ON jobs (fairness_key, queue, kind)
    WHERE state = 'running' AND fairness_key IS NOT NULL;

-- The per-key rate limits' token buckets that are not full: tokens starts at at (µs). A key
-- without a row has a full bucket. A bucket last written more than one period ago is full
-- again; the claims that use the limit delete such rows (by scope, name and at), as many as
-- they may add, so the table holds about the keys that started jobs within the last period.
CREATE TABLE key_buckets (
    scope        TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    fairness_key TEXT    NOT NULL,
    tokens       REAL    NOT NULL,
    at           INTEGER NOT NULL,
    PRIMARY KEY (scope, name, fairness_key)
) WITHOUT ROWID;
CREATE INDEX key_buckets_at ON key_buckets (scope, name, at);
