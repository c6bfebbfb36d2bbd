-- Results and dead letters (contracts 11 and 12).
--
-- result_ttl_us is a job's own result retention (InsertOpts.ResultTTL); 0 defers to the
-- worker's and the client's. When a job ends, expires_at is set from it (or from the
-- dead-letter retention for a failed job); expired rows are hidden from reads and deleted by
-- the leader's sweep (jobs_expires).
ALTER TABLE jobs ADD COLUMN result_ttl_us INTEGER NOT NULL DEFAULT 0;

-- Deleting a job deletes its idempotency key (jobs_history_delete): without this index each
-- deleted row would scan the whole table.
CREATE INDEX idempotency_keys_job ON idempotency_keys (job_id);

-- The audit log of dead-letter replays. A replay never changes its source (which stays
-- failed): it creates a new job, and this row, in one transaction. original_id is the first
-- job of the lineage. Rows outlive the jobs they name.
CREATE TABLE job_replays (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    source_job_id TEXT    NOT NULL,
    new_job_id    TEXT    NOT NULL,
    original_id   TEXT    NOT NULL,
    replayed_by   TEXT    NOT NULL,
    replayed_at   INTEGER NOT NULL,
    reason        TEXT
);
CREATE INDEX job_replays_source ON job_replays (source_job_id);
CREATE INDEX job_replays_original ON job_replays (original_id);
