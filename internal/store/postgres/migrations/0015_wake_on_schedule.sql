-- Wake the leader instead of having it poll (an idle node's cost): the job triggers also send
-- 's:<unix microseconds>' with the earliest run_at of the jobs a statement made scheduled
-- (an enqueue for later, a retry's backoff, a snooze), so the leader promotes them on time
-- however long its safety poll is; the schedules trigger sends 'S' when any schedule is
-- created, changed or deleted, so the leader looks at its fire times again. Identical payloads
-- fold within a transaction, as the 'q:' ones do.
CREATE OR REPLACE FUNCTION {schema}.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
    SELECT id, version, created_at, NULL, state, last_actor, last_reason FROM new_rows;
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload) FROM (
        SELECT DISTINCT 'q:' || queue AS payload FROM new_rows WHERE state = 'queued'
        UNION ALL
        SELECT 's:' || floor(extract(epoch FROM min(run_at)) * 1000000)::bigint
        FROM new_rows WHERE state = 'scheduled' HAVING count(*) > 0
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
               o.token, o.attempt, o.worker_id, o.started_at, o.version AS old_version, n.run_at
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
        FROM changed WHERE from_state = 'running'
    )
    SELECT count(pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload)) INTO sent FROM (
        SELECT DISTINCT 'q:' || queue AS payload FROM changed WHERE to_state = 'queued'
        UNION ALL
        SELECT 'c:' || id FROM changed WHERE from_state = 'running' AND to_state = 'canceled'
        UNION ALL
        SELECT 's:' || floor(extract(epoch FROM min(run_at)) * 1000000)::bigint
        FROM changed WHERE to_state = 'scheduled' HAVING count(*) > 0
    ) p;
    RETURN NULL;
END
$$;

CREATE FUNCTION {schema}.schedules_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs', 'S');
    RETURN NULL;
END
$$;

CREATE TRIGGER schedules_changed AFTER INSERT OR UPDATE OR DELETE ON {schema}.schedules
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.schedules_changed();
