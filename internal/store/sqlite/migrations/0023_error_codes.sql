-- Business errors (contract 18): an attempt can end with an error code that is part of the
-- job's contract. The job row keeps its last attempt's code (last_error_code, as last_error),
-- job_attempts each recorded attempt's, and the trigger copies the one into the other. Dead
-- letters are listed by code through the partial index; rows without a code are not in it.
ALTER TABLE jobs ADD COLUMN last_error_code TEXT;
ALTER TABLE job_attempts ADD COLUMN error_code TEXT;
CREATE INDEX jobs_error_code ON jobs (last_error_code, id) WHERE last_error_code IS NOT NULL;

DROP TRIGGER jobs_attempt_end;
CREATE TRIGGER jobs_attempt_end AFTER UPDATE OF state ON jobs
WHEN old.state = 'running' AND new.state <> 'running'
 AND NOT (new.state IN ('completed', 'failed', 'canceled') AND new.worker_id IS NOT NULL
          AND new.worker_id = old.worker_id AND new.token = old.token AND new.attempt = old.attempt
          AND new.started_at IS old.started_at)
BEGIN
    INSERT INTO job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome, error, stack,
                              start_seq, end_seq, to_state, actor, reason, error_code)
    VALUES (new.id, old.token, old.attempt, old.worker_id, old.started_at, new.updated_at,
            coalesce(new.last_outcome, 'error'), new.last_error, new.last_stack,
            old.version, new.version, new.state, new.last_actor, new.last_reason, new.last_error_code);
END;
