-- Held wake-ups (wakes.go). A transaction that sends a notification commits under a lock on
-- the whole server's notification queue, held until its commit is flushed, so enqueues in
-- small transactions that each notify commit one at a time. A store now takes turns for the
-- wake-ups of its own inserts, per queue: an insert statement may name, in the
-- transaction-local setting hopper.held_wakes (a text array), the wake-ups its trigger must
-- leave out ('q:<queue>' for jobs that become queued there, 's:' for scheduled ones); the
-- store sends them itself when the turn is free, after the insert has committed. Any other
-- insert, and every older binary, leaves the setting empty and notifies as before.
CREATE OR REPLACE FUNCTION {schema}.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held text[] := coalesce(nullif(current_setting('hopper.held_wakes', true), ''), '{}')::text[];
BEGIN
    INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
    SELECT id, version, created_at, NULL, state, last_actor, last_reason FROM new_rows;
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
