-- Limits per key (docs/flow-control.md#limits-per-key): a queue or a kind may cap the running
-- jobs of each fairness key (cap_per_key) and rate-limit each key's starts (rate_per_key_limit
-- per rate_per_key_period_us microseconds). Both apply to keyed jobs only, which the fair claim
-- takes (fair.go); a claim they apply to locks the row that holds them, as for a cap.
ALTER TABLE {schema}.queues
    ADD COLUMN cap_per_key integer CHECK (cap_per_key >= 1),
    ADD COLUMN rate_per_key_limit integer,
    ADD COLUMN rate_per_key_period_us bigint,
    ADD CONSTRAINT queues_rate_per_key_valid CHECK ((rate_per_key_limit IS NULL) = (rate_per_key_period_us IS NULL)
        AND (rate_per_key_limit IS NULL OR (rate_per_key_limit >= 1 AND rate_per_key_period_us >= 1)));
ALTER TABLE {schema}.kinds
    ADD COLUMN cap_per_key integer CHECK (cap_per_key >= 1),
    ADD COLUMN rate_per_key_limit integer,
    ADD COLUMN rate_per_key_period_us bigint,
    ADD CONSTRAINT kinds_rate_per_key_valid CHECK ((rate_per_key_limit IS NULL) = (rate_per_key_period_us IS NULL)
        AND (rate_per_key_limit IS NULL OR (rate_per_key_limit >= 1 AND rate_per_key_period_us >= 1)));

-- The running keyed jobs by key: a claim counts the running jobs of the keys it reads here.
-- Unkeyed jobs are not in it, so they pay nothing for it.
CREATE INDEX jobs_running_keyed ON {schema}.jobs (fairness_key, queue, kind)
    WHERE state = 'running' AND fairness_key IS NOT NULL;

-- The per-key rate limits' token buckets that are not full: tokens starts at at. A key without
-- a row has a full bucket. A bucket last written more than one period ago is full again; the
-- claims that use the limit delete such rows (by scope, name and at), as many as they may add,
-- so the table holds about the keys that started jobs within the last period.
CREATE TABLE {schema}.key_buckets (
    scope        text             NOT NULL,
    name         text             NOT NULL,
    fairness_key text             NOT NULL,
    tokens       double precision NOT NULL,
    at           timestamptz      NOT NULL,
    PRIMARY KEY (scope, name, fairness_key)
);
CREATE INDEX key_buckets_at ON {schema}.key_buckets (scope, name, at);
