-- Dependencies (docs/workflows.md): the release of a statement's endings locks the children in
-- one order, and a job records the parent whose failure canceled it (canceled_by, below). 0030 released each ended parent in a row trigger of its own: a statement that
-- ended several parents (a finish batch) locked the children of the first, then those of the
-- next, so two batches ending parents of the same children in different orders could
-- deadlock. Now the statement trigger that writes the history (jobs_after_update, as 0025 left
-- it) collects every parent the statement ended and calls release_children once for them all.
-- Its first step locks, in one statement and in id order, every waiting job the release may
-- write: the children of the endings and, where an ending failed, the cascade below them (the
-- children of the children it cancels, and so on), so that what follows waits for no lock
-- (a child enqueued meanwhile apart). Since a parent's id sorts before its children's (ids
-- are UUIDv7s, made when the job is built, and a parent exists before its child), every
-- transaction takes the locks of a release in increasing id order, after those of the jobs it
-- ends.
DROP TRIGGER jobs_release ON {schema}.jobs;
DROP FUNCTION {schema}.jobs_release();

-- canceled_by names the parent whose failure (or cancel) canceled the job by its policy
-- cancel, directly or down a cascade; NULL for every other job, a job canceled by a user among
-- them. A retry in place of that parent puts the job back to waiting, and the jobs it canceled
-- in turn after it (docs/workflows.md#retrying-a-failed-parent; store/deps.go's Rearm).
ALTER TABLE {schema}.jobs ADD COLUMN canceled_by text COLLATE "C";

-- release_children releases the children of the ended parents ids (sorted), with their
-- outcomes (completed, failed, canceled, skipped), expiries (a child one cancels without a
-- result TTL of its own is kept as long) and actors, at at_. Level by level, in a loop rather
-- than by recursion: a child it cancels that has children of its own is an ending of the next
-- level. Its own updates fire jobs_after_update, which writes their history and, while a release
-- is under way (hopper.releasing), leaves the release to this loop. Each dependency not counted
-- yet counts down once (a parent retried in place ends again); a child counted down by several
-- parents of one level is moved once, canceled by the first failed one its policy does not run
-- through, else released by the last. It runs with nested loops allowed (jobs_after_update
-- turns them off), so that its joins look jobs up by key.
CREATE FUNCTION {schema}.release_children(ids text[], outcomes text[], expiries timestamptz[],
    actors text[], at_ timestamptz) RETURNS void LANGUAGE plpgsql
SET enable_nestloop = on AS $$
DECLARE
    dep_parents text[];
    dep_children text[];
    kids text[];
    first boolean := true;
BEGIN
    PERFORM set_config('hopper.releasing', 'on', true);
    WHILE cardinality(ids) > 0 LOOP
        -- The dependencies the level counts down, and its outcomes recorded; both parts read
        -- the rows as they were before the statement.
        WITH uncounted AS (SELECT parent_id, child_id FROM {schema}.job_deps
                           WHERE parent_id = ANY(ids) AND parent_outcome IS NULL),
             o AS (UPDATE {schema}.job_deps d SET parent_outcome = e.outcome
                   FROM unnest(ids, outcomes) AS e(id, outcome) WHERE d.parent_id = e.id)
        SELECT array_agg(parent_id), array_agg(child_id), array_agg(DISTINCT child_id)
        INTO dep_parents, dep_children, kids FROM uncounted;
        EXIT WHEN kids IS NULL;
        -- The locks, in id order, of the whole cascade the failures may make, taken on the
        -- first level: the later levels find theirs held (but for a child enqueued after this
        -- statement began, which their update locks).
        IF first THEN
            PERFORM 1 FROM {schema}.jobs WHERE id = ANY(ARRAY(
                WITH RECURSIVE down(id, failing) AS (
                    SELECT d.child_id COLLATE "C", e.outcome IN ('failed', 'canceled')
                    FROM unnest(dep_parents, dep_children) AS d(parent_id, child_id)
                    JOIN unnest(ids, outcomes) AS e(id, outcome) ON e.id = d.parent_id
                    UNION
                    SELECT d.child_id, j.on_parent_failure = 'cancel'
                    FROM down JOIN {schema}.jobs j ON j.id = down.id
                    JOIN {schema}.job_deps d ON d.parent_id = down.id AND d.parent_outcome IS NULL
                    WHERE down.failing AND j.state = 'waiting' AND j.has_children
                      AND j.on_parent_failure <> 'run'
                ) SELECT id FROM down))
            AND state = 'waiting' ORDER BY id FOR NO KEY UPDATE;
            first := false;
        END IF;
        WITH e AS (SELECT * FROM unnest(ids, outcomes, expiries, actors) AS e(id, outcome, expires_at, actor)),
        per AS (
            SELECT d.child_id, count(*)::int AS n,
                   min(d.parent_id) FILTER (WHERE e.outcome IN ('failed', 'canceled')) AS failed_by,
                   max(d.parent_id) AS last_by
            FROM unnest(dep_parents, dep_children) AS d(parent_id, child_id)
            JOIN e ON e.id = d.parent_id GROUP BY d.child_id
        ),
        c AS (
            SELECT per.child_id, per.n, per.failed_by IS NOT NULL AS failed,
                   f.id AS f_id, f.outcome AS f_outcome, f.expires_at AS f_expires, f.actor AS f_actor,
                   l.id AS l_id, l.outcome AS l_outcome, l.actor AS l_actor
            FROM per JOIN e l ON l.id = per.last_by LEFT JOIN e f ON f.id = per.failed_by
        ),
        moved AS (
            UPDATE {schema}.jobs j SET
                parents_pending = j.parents_pending - c.n,
                state = {schema}.dep_next(c.failed, j.on_parent_failure, j.parents_pending - c.n, j.run_at, at_),
                version = j.version + CASE WHEN {schema}.dep_next(c.failed, j.on_parent_failure,
                    j.parents_pending - c.n, j.run_at, at_) = 'waiting' THEN 0 ELSE 1 END,
                updated_at = at_,
                run_at = CASE WHEN {schema}.dep_next(c.failed, j.on_parent_failure, j.parents_pending - c.n,
                    j.run_at, at_) = 'queued' THEN at_ ELSE j.run_at END,
                finished_at = CASE WHEN {schema}.dep_next(c.failed, j.on_parent_failure, j.parents_pending - c.n,
                    j.run_at, at_) = 'canceled' THEN at_ END,
                parent_skipped = c.failed AND j.on_parent_failure = 'skip',
                canceled_by = CASE WHEN c.failed AND j.on_parent_failure = 'cancel' THEN c.f_id END,
                expires_at = CASE WHEN NOT c.failed OR j.on_parent_failure = 'run' THEN j.expires_at
                    WHEN j.result_ttl_us > 0 THEN at_ + j.result_ttl_us * interval '1 microsecond'
                    ELSE c.f_expires END,
                last_actor = CASE {schema}.dep_next(c.failed, j.on_parent_failure, j.parents_pending - c.n,
                    j.run_at, at_) WHEN 'waiting' THEN j.last_actor WHEN 'canceled' THEN c.f_actor ELSE c.l_actor END,
                last_reason = CASE {schema}.dep_next(c.failed, j.on_parent_failure, j.parents_pending - c.n, j.run_at, at_)
                    WHEN 'waiting' THEN j.last_reason
                    WHEN 'canceled' THEN CASE WHEN j.on_parent_failure = 'skip' THEN 'skipped: ' ELSE '' END
                        || 'parent ' || c.f_id || ' ' || c.f_outcome
                    ELSE 'parents ended (last: ' || c.l_id || ' ' || c.l_outcome || ')' END
            FROM c WHERE j.id = ANY(kids) AND j.id = c.child_id AND j.state = 'waiting'
            RETURNING j.id, j.state, j.parent_skipped, j.has_children, j.expires_at, j.last_actor
        )
        SELECT array_agg(id ORDER BY id), array_agg(CASE WHEN parent_skipped THEN 'skipped' ELSE 'canceled' END ORDER BY id),
               array_agg(expires_at ORDER BY id), array_agg(last_actor ORDER BY id)
        INTO ids, outcomes, expiries, actors FROM moved WHERE state = 'canceled' AND has_children;
    END LOOP;
    PERFORM set_config('hopper.releasing', 'off', true);
END
$$;

CREATE OR REPLACE FUNCTION {schema}.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off AS $$
DECLARE
    sent bigint;
    e_ids text[];
    e_outcomes text[];
    e_expiries timestamptz[];
    e_actors text[];
    e_at timestamptz;
BEGIN
    WITH changed AS MATERIALIZED (
        SELECT n.id, n.queue, n.version, n.updated_at, o.state AS from_state, n.state AS to_state,
               n.last_actor, n.last_reason, n.last_outcome, n.last_error, n.last_stack, n.last_error_code,
               o.token, o.attempt, o.worker_id, o.started_at, o.version AS old_version, n.run_at,
               n.group_key, n.has_children, n.parent_skipped, n.expires_at,
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
    ), ended AS (
        -- The parents this statement ended, for release_children.
        SELECT array_agg(id ORDER BY id) AS ids,
               array_agg(CASE WHEN to_state = 'canceled' AND parent_skipped THEN 'skipped' ELSE to_state END
                         ORDER BY id) AS outcomes,
               array_agg(expires_at ORDER BY id) AS expiries, array_agg(last_actor ORDER BY id) AS actors,
               max(updated_at) AS at_
        FROM changed WHERE has_children AND to_state IN ('completed', 'failed', 'canceled')
    )
    SELECT count(pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload)),
           (SELECT ids FROM ended), (SELECT outcomes FROM ended), (SELECT expiries FROM ended),
           (SELECT actors FROM ended), (SELECT at_ FROM ended)
    INTO sent, e_ids, e_outcomes, e_expiries, e_actors, e_at FROM (
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
    IF e_ids IS NOT NULL AND current_setting('hopper.releasing', true) IS DISTINCT FROM 'on' THEN
        PERFORM {schema}.release_children(e_ids, e_outcomes, e_expiries, e_actors, e_at);
    END IF;
    RETURN NULL;
END
$$;
