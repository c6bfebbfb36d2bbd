-- Lean history: the job row holds the two history entries it can hold, so a job that is
-- enqueued, runs once and completes writes no history row (and the sweep deletes none).
--
--   * Its creation. created_actor and created_reason keep who enqueued it and why; JobEvents
--     reads the creation (seq 1, at created_at) from the row. The trigger writes a job_events
--     row only for an insert that leaves created_actor NULL (an older binary's).
--   * Its last attempt, when that attempt ended the job (completed, failed or canceled while
--     running). The ending statement keeps worker_id in the row (the scan shows it only while
--     the job runs), and the row's token, attempt, started_at, finished_at and last_* fields
--     are that attempt's; a finished row never changes again (a replay is a new row). The
--     trigger writes a job_attempts row for every other end of an attempt, and for a terminal
--     one whose statement cleared worker_id or changed token, attempt or started_at (an older
--     binary's, or an ending that gives its attempt back). JobAttempts and JobEvents read the row's attempt when job_attempts has no row
--     with the row's token.
--
-- Rows written before this migration keep their history rows, and their worker_id is NULL once
-- finished, so nothing is read twice.
ALTER TABLE jobs ADD COLUMN created_actor TEXT;
ALTER TABLE jobs ADD COLUMN created_reason TEXT;

DROP TRIGGER jobs_event_insert;
CREATE TRIGGER jobs_event_insert AFTER INSERT ON jobs
WHEN new.created_actor IS NULL
BEGIN
    INSERT INTO job_events (job_id, seq, at, from_state, to_state, actor, reason)
    VALUES (new.id, new.version, new.created_at, NULL, new.state, new.last_actor, new.last_reason);
END;

DROP TRIGGER jobs_attempt_end;
CREATE TRIGGER jobs_attempt_end AFTER UPDATE OF state ON jobs
WHEN old.state = 'running' AND new.state <> 'running'
 AND NOT (new.state IN ('completed', 'failed', 'canceled') AND new.worker_id IS NOT NULL
          AND new.worker_id = old.worker_id AND new.token = old.token AND new.attempt = old.attempt
          AND new.started_at IS old.started_at)
BEGIN
    INSERT INTO job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome, error, stack,
                              start_seq, end_seq, to_state, actor, reason)
    VALUES (new.id, old.token, old.attempt, old.worker_id, old.started_at, new.updated_at,
            coalesce(new.last_outcome, 'error'), new.last_error, new.last_stack,
            old.version, new.version, new.state, new.last_actor, new.last_reason);
END;
