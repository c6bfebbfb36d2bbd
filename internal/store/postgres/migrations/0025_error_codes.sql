-- Business errors (contract 18): an attempt can end with an error code that is part of the
-- job's contract. The job row keeps its last attempt's code (last_error_code, as last_error),
-- job_attempts each recorded attempt's, and the trigger copies the one into the other (the
-- function as 0020 left it, with the code added). Dead letters are listed by code through the
-- partial index; rows without a code are not in it.
ALTER TABLE {schema}.jobs ADD COLUMN last_error_code text;
ALTER TABLE {schema}.job_attempts ADD COLUMN error_code text;
CREATE INDEX jobs_error_code ON {schema}.jobs (last_error_code, id) WHERE last_error_code IS NOT NULL;

CREATE OR REPLACE FUNCTION {schema}.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off AS $$
DECLARE
    sent bigint;
BEGIN
    WITH changed AS MATERIALIZED (
        SELECT n.id, n.queue, n.version, n.updated_at, o.state AS from_state, n.state AS to_state,
               n.last_actor, n.last_reason, n.last_outcome, n.last_error, n.last_stack, n.last_error_code,
               o.token, o.attempt, o.worker_id, o.started_at, o.version AS old_version, n.run_at,
               n.group_key,
               (n.state IN ('completed', 'failed', 'canceled') AND n.worker_id IS NOT NULL
                AND n.worker_id = o.worker_id AND n.token = o.token AND n.attempt = o.attempt
                AND n.started_at IS NOT DISTINCT FROM o.started_at) AS row_keeps_attempt
        FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.state <> n.state
    ), events AS (
        INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
        SELECT id, version, updated_at, from_state, to_state, last_actor, last_reason FROM changed
        WHERE from_state <> 'running' AND to_state <> 'running'
    ), attempts AS (
        INSERT INTO {schema}.job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome,
                                           error, stack, start_seq, end_seq, to_state, actor, reason, error_code)
        SELECT id, token, attempt, worker_id, started_at, updated_at, coalesce(last_outcome, 'error'),
               last_error, last_stack, old_version, version, to_state, last_actor, last_reason, last_error_code
        FROM changed WHERE from_state = 'running' AND NOT row_keeps_attempt
    )
    SELECT count(pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload)) INTO sent FROM (
        SELECT {schema}.queue_wakeup(queue, min(id)) AS payload FROM changed
        WHERE to_state = 'queued'
           OR (group_key IS NOT NULL AND to_state IN ('completed', 'failed', 'canceled'))
        GROUP BY queue
        UNION ALL
        SELECT 'c:' || id FROM changed WHERE from_state = 'running' AND to_state = 'canceled'
        UNION ALL
        SELECT 's:' || floor(extract(epoch FROM min(run_at)) * 1000000)::bigint
        FROM changed WHERE to_state = 'scheduled' HAVING count(*) > 0
    ) p;
    RETURN NULL;
END
$$;
