-- Compaction of queued jobs (issue 32; store/compact.go). Same tables as SQLite's 0024. A
-- compaction replaces the waiting jobs of one kind's group by a new job in one transaction;
-- job_compactions names, for each replaced job, the job that replaced it. Rows outlive the
-- jobs they name, as job_replays'. jobs_compact serves the look-up of a kind's waiting grouped
-- jobs. A kind's compact_over (with compact_policy) asks the leader to compact its groups once
-- more than that many wait.
CREATE TABLE {schema}.job_compactions (
    replaced_job_id text COLLATE "C" PRIMARY KEY,
    new_job_id      text COLLATE "C" NOT NULL,
    actor           text        NOT NULL,
    compacted_at    timestamptz NOT NULL
);
CREATE INDEX job_compactions_new ON {schema}.job_compactions (new_job_id);
CREATE INDEX jobs_compact ON {schema}.jobs (kind, group_key, id) WHERE state = 'queued' AND group_key IS NOT NULL;
ALTER TABLE {schema}.kinds ADD COLUMN compact_over integer;
ALTER TABLE {schema}.kinds ADD COLUMN compact_policy text;
