-- Rate limits (docs/flow-control.md#rate-limits): at most rate_limit job starts per
-- rate_period_us microseconds for a queue or a kind, across every node. Each is a token bucket
-- kept in the row it limits: rate_tokens starts the claim could take at rate_at (at most
-- rate_limit), refilled at rate_limit per period. A claim that a rate applies to locks the row,
-- refills the bucket to its own time, takes at most the whole tokens, and writes back what is
-- left. All four columns are NULL when no rate is set. A kinds row is kept while it holds a
-- rate, as for a cap.
ALTER TABLE {schema}.queues
    ADD COLUMN rate_limit integer,
    ADD COLUMN rate_period_us bigint,
    ADD COLUMN rate_tokens double precision,
    ADD COLUMN rate_at timestamptz,
    ADD CONSTRAINT queues_rate_valid CHECK ((rate_limit IS NULL) = (rate_period_us IS NULL)
        AND (rate_limit IS NULL OR (rate_limit >= 1 AND rate_period_us >= 1)));
ALTER TABLE {schema}.kinds
    ADD COLUMN rate_limit integer,
    ADD COLUMN rate_period_us bigint,
    ADD COLUMN rate_tokens double precision,
    ADD COLUMN rate_at timestamptz,
    ADD CONSTRAINT kinds_rate_valid CHECK ((rate_limit IS NULL) = (rate_period_us IS NULL)
        AND (rate_limit IS NULL OR (rate_limit >= 1 AND rate_period_us >= 1)));
