-- Incidents resolved in place (contract 18), and replays that say they are repeated.
--
-- The dead-letter audit log (job_replays) records two actions: 'replay' (a new job, new_job_id,
-- made from the dead letter) and 'retry' (the dead letter itself back to work with more
-- attempts: new_job_id is source_job_id). A dead letter counts as replayed only by rows with
-- action 'replay'. forced marks a replay or retry made although the dead letter had been
-- replayed before (ReplayOpts.Again, RetryOpts.Again). Rows written before this migration are
-- replays, not forced.
ALTER TABLE job_replays ADD COLUMN action TEXT NOT NULL DEFAULT 'replay';
ALTER TABLE job_replays ADD COLUMN forced INTEGER NOT NULL DEFAULT 0;
