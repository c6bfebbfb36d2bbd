-- Results and dead letters (contracts 11 and 12). Same tables and columns as SQLite's 0004.
--
-- result_ttl_us is a job's own result retention (InsertOpts.ResultTTL); 0 defers to the
-- worker's and the client's. When a job ends, expires_at is set from it (or from the
-- dead-letter retention for a failed job); expired rows are hidden from reads and deleted by
-- the leader's sweep (jobs_expires). A constant default adds the column without a rewrite.
ALTER TABLE {schema}.jobs ADD COLUMN result_ttl_us bigint NOT NULL DEFAULT 0;

-- The audit log of dead-letter replays. A replay never changes its source (which stays
-- failed): it creates a new job, and this row, in one transaction. original_id is the first
-- job of the lineage. Rows outlive the jobs they name.
CREATE TABLE {schema}.job_replays (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_job_id text COLLATE "C" NOT NULL,
    new_job_id    text COLLATE "C" NOT NULL,
    original_id   text COLLATE "C" NOT NULL,
    replayed_by   text        NOT NULL,
    replayed_at   timestamptz NOT NULL,
    reason        text
);
CREATE INDEX job_replays_source ON {schema}.job_replays (source_job_id);
CREATE INDEX job_replays_original ON {schema}.job_replays (original_id);
