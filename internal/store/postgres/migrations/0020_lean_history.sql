-- Lean history: the job row holds the two history entries it can hold, so a job that is
-- enqueued, runs once and completes writes no history row at all.
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
ALTER TABLE {schema}.jobs ADD COLUMN created_actor text, ADD COLUMN created_reason text;

CREATE OR REPLACE FUNCTION {schema}.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held text[] := coalesce(nullif(current_setting('hopper.held_wakes', true), ''), '{}')::text[];
BEGIN
    INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
    SELECT id, version, created_at, NULL, state, last_actor, last_reason FROM new_rows
    WHERE created_actor IS NULL;
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload) FROM (
        SELECT {schema}.queue_wakeup(queue, min(id)) AS payload FROM new_rows
        WHERE state = 'queued' AND ('q:' || queue) <> ALL (held) GROUP BY queue
        UNION ALL
        SELECT 's:' || floor(extract(epoch FROM min(run_at)) * 1000000)::bigint
        FROM new_rows WHERE state = 'scheduled' AND 's:' <> ALL (held) HAVING count(*) > 0
    ) p;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION {schema}.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off AS $$
DECLARE
    sent bigint;
BEGIN
    WITH changed AS MATERIALIZED (
        SELECT n.id, n.queue, n.version, n.updated_at, o.state AS from_state, n.state AS to_state,
               n.last_actor, n.last_reason, n.last_outcome, n.last_error, n.last_stack,
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
                                           error, stack, start_seq, end_seq, to_state, actor, reason)
        SELECT id, token, attempt, worker_id, started_at, updated_at, coalesce(last_outcome, 'error'),
               last_error, last_stack, old_version, version, to_state, last_actor, last_reason
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
