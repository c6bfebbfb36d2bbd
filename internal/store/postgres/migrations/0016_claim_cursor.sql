-- The claim cursor (claim.go): a claim starts its scan of jobs_claim where the previous claim
-- of the same queue found its first job, so it does not walk the index entries of the jobs
-- claimed before, which a long transaction elsewhere keeps from being removed. A store may do
-- that only while it hears of every job that becomes claimable behind that point, so the
-- queue wake-ups now carry the smallest id of the jobs concerned: 'q:<queue> <id>'. They are
-- also sent when a grouped job finishes, since that can make the next job of its group
-- claimable without any row becoming queued.
--
-- PostgreSQL folds identical payloads within a transaction, so that a transaction that
-- enqueues in many statements still sends one wake-up per queue. With an id in the payload the
-- statements' payloads would differ; so the first wake-up of a queue in a transaction is
-- remembered in a transaction-local setting and later statements send it again unless they
-- concern a smaller id (then they send, and remember, that one).
CREATE FUNCTION {schema}.queue_wakeup(queue text, first text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    setting text := 'hopper.wake_' || md5('{schema} ' || queue);
    sent text := current_setting(setting, true);
BEGIN
    IF coalesce(sent, '') = '' OR first COLLATE "C" < sent COLLATE "C" THEN
        PERFORM set_config(setting, first, true);
        sent := first;
    END IF;
    RETURN 'q:' || queue || ' ' || sent;
END
$$;

CREATE OR REPLACE FUNCTION {schema}.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
    SELECT id, version, created_at, NULL, state, last_actor, last_reason FROM new_rows;
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload) FROM (
        SELECT {schema}.queue_wakeup(queue, min(id)) AS payload FROM new_rows WHERE state = 'queued' GROUP BY queue
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
               o.token, o.attempt, o.worker_id, o.started_at, o.version AS old_version, n.run_at,
               n.group_key
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
