-- Dependencies (docs/workflows.md): release_children (0032) reads and writes by key only. In the
-- workflow benchmark (2,000 workflows of 10 steps and a fan-in, finish batches of a few hundred
-- parents) its statements had turned quadratic or worse: the count-down's read and the record
-- of the outcomes scanned the whole of job_deps once per finish batch (the planner prices a few
-- hundred index probes above a sequential scan of a young table, which updates had bloated), and
-- the children's update joined each child back to the level's endings by a scan of them all, in
-- the database's collation: 40 to 110 ms a batch, under the locks of the children it moves, so
-- that the other batches waited for them.
--
-- Now each dependency the level counts down is found by a look-up of job_deps' primary key per
-- ending, and carries its parent's place in the level's arrays, so the children's update reads
-- the outcome, expiry and actor of the parent that names the move by subscript, not by a join.
-- The function runs with sequential scans priced out, so that a table the planner thinks small
-- is still read through its keys (a release of 100,000 children at once hashes them, as it
-- should: joins are the planner's to choose). Its behaviour is 0032's: the same locks in the
-- same order, the same count-down, the same outcome for each child.
CREATE OR REPLACE FUNCTION {schema}.release_children(ids text[], outcomes text[], expiries timestamptz[],
    actors text[], at_ timestamptz) RETURNS void LANGUAGE plpgsql
SET enable_nestloop = on SET enable_seqscan = off AS $$
DECLARE
    dep_at int[];        -- each dependency counted down: its parent's place in ids
    dep_children text[]; -- and its child
    kids text[];
    first boolean := true;
BEGIN
    PERFORM set_config('hopper.releasing', 'on', true);
    WHILE cardinality(ids) > 0 LOOP
        -- The dependencies the level counts down (not counted yet: a parent retried in place
        -- ends again), and its outcomes recorded; both parts read the rows as they were
        -- before the statement. ids is sorted, so a parent's place orders as its id.
        WITH uncounted AS (
            SELECT e.i::int AS i, d.child_id
            FROM unnest(ids) WITH ORDINALITY AS e(id, i)
            CROSS JOIN LATERAL (SELECT child_id FROM {schema}.job_deps
                                WHERE parent_id = e.id AND parent_outcome IS NULL OFFSET 0) d),
        o AS (UPDATE {schema}.job_deps d SET parent_outcome = e.outcome
              FROM unnest(ids, outcomes) AS e(id, outcome) WHERE d.parent_id = e.id)
        SELECT array_agg(i), array_agg(child_id), array_agg(DISTINCT child_id)
        INTO dep_at, dep_children, kids FROM uncounted;
        EXIT WHEN kids IS NULL;
        -- The locks, in id order, of the whole cascade the failures may make, taken on the
        -- first level: the later levels find theirs held (but for a child enqueued after this
        -- statement began, which their update locks).
        IF first THEN
            PERFORM 1 FROM {schema}.jobs WHERE id = ANY(ARRAY(
                WITH RECURSIVE down(id, failing) AS (
                    SELECT d.child_id COLLATE "C", outcomes[d.i] IN ('failed', 'canceled')
                    FROM unnest(dep_at, dep_children) AS d(i, child_id)
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
        -- Each child once for all its parents of the level: the failed parent of smallest id
        -- names a cancel, the parent of largest id a release.
        WITH per AS (
            SELECT d.child_id COLLATE "C" AS child_id, count(*)::int AS n,
                   min(d.i) FILTER (WHERE outcomes[d.i] IN ('failed', 'canceled')) AS f,
                   max(d.i) AS l
            FROM unnest(dep_at, dep_children) AS d(i, child_id) GROUP BY d.child_id
        ),
        c AS (
            SELECT per.child_id, per.n, per.f IS NOT NULL AS failed,
                   ids[per.f] AS f_id, outcomes[per.f] AS f_outcome, expiries[per.f] AS f_expires,
                   actors[per.f] AS f_actor, ids[per.l] AS l_id, outcomes[per.l] AS l_outcome,
                   actors[per.l] AS l_actor
            FROM per
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
