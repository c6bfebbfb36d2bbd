-- Dependencies (issue 33, docs/workflows.md): a job inserted with parents waits (state
-- waiting) until they have all ended. job_deps holds one row per (parent, child), keyed by
-- parent for the ending's look-up; parent_outcome is how the parent ended (completed, failed,
-- canceled, skipped), NULL while it runs. On the jobs row: has_children flags a parent (set by
-- its child's insert with an UPDATE, which also serialises against a concurrent ending);
-- parents_pending counts a waiting child's unended parents; on_parent_failure is a child's
-- policy (NULL for a job without parents); parent_skipped marks a job its skip policy
-- canceled, which its own children count as succeeded.
ALTER TABLE {schema}.jobs
    ADD COLUMN has_children boolean NOT NULL DEFAULT false,
    ADD COLUMN parents_pending integer NOT NULL DEFAULT 0,
    ADD COLUMN on_parent_failure text,
    ADD COLUMN parent_skipped boolean NOT NULL DEFAULT false;

ALTER TABLE {schema}.jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE {schema}.jobs ADD CONSTRAINT jobs_state_check CHECK (state IN
    ('waiting', 'scheduled', 'queued', 'running', 'suspended', 'completed', 'failed', 'canceled')) NOT VALID;
ALTER TABLE {schema}.jobs VALIDATE CONSTRAINT jobs_state_check;

CREATE TABLE {schema}.job_deps (
    parent_id      text COLLATE "C" NOT NULL,
    child_id       text COLLATE "C" NOT NULL,
    parent_outcome text,
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX job_deps_child ON {schema}.job_deps (child_id);

-- Listing waiting jobs: a rare state with its own index, as jobs_state_rare for the others.
CREATE INDEX jobs_waiting ON {schema}.jobs (id) WHERE state = 'waiting';

-- The release. Every move of a job with children into a terminal state (a completion, a dead
-- letter, a cancel, a rescue or a deadline that fails it: whatever statement makes it) fires
-- this trigger in its own transaction; a job without children does not (the WHEN clause, no
-- function call). It records the parent's outcome on its dependency rows and counts it down on
-- its waiting children, which it releases (queued, run_at now; scheduled when their run_at is
-- later) when no parent is left, or cancels by their policy when the parent failed. Children it
-- cancels that have children of their own are released in turn, level by level in a loop, not
-- by recursion: the children's updates fire this trigger too, and it returns at once while a
-- release is under way (hopper.releasing), so a chain of any length costs no stack. Parents
-- ending in concurrent transactions update a child one after the other (its row lock), each
-- counting down the count the other left: the child is released once.
-- dep_next is where a waiting child goes when a parent's ending leaves it pending unended
-- parents: canceled by a failure it does not run through, else waiting while some parent has
-- not ended, else scheduled (run_at later than now) or queued. The release below and a child's
-- insert (its parents may have ended already) both decide with it.
CREATE FUNCTION {schema}.dep_next(failed boolean, policy text, pending integer, run_at timestamptz, now timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN failed AND policy <> 'run' THEN 'canceled'
                WHEN pending > 0 THEN 'waiting'
                WHEN run_at > now THEN 'scheduled'
                ELSE 'queued' END
$$;

CREATE FUNCTION {schema}.jobs_release() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids      text[] := ARRAY[NEW.id];
    outcomes text[] := ARRAY[CASE WHEN NEW.state = 'canceled' AND NEW.parent_skipped THEN 'skipped' ELSE NEW.state END];
    expiries timestamptz[] := ARRAY[NEW.expires_at];
    next_ids text[];
    next_outcomes text[];
    next_expiries timestamptz[];
    kids text[];
    a text[]; b text[]; c timestamptz[];
    at_ timestamptz := NEW.updated_at;
    actor text := NEW.last_actor;
    failed boolean;
BEGIN
    IF current_setting('hopper.releasing', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('hopper.releasing', 'on', true);
    WHILE cardinality(ids) > 0 LOOP
        next_ids := '{}'; next_outcomes := '{}'; next_expiries := '{}';
        FOR i IN 1 .. cardinality(ids) LOOP
            failed := outcomes[i] IN ('failed', 'canceled');
            -- The children as an array: the update below looks each up by primary key, whatever
            -- the plan of a join would guess.
            -- Only the dependencies not counted yet count down: a parent retried in place ends
            -- again. Both parts read the rows as they were before the statement.
            WITH uncounted AS (SELECT child_id FROM {schema}.job_deps
                               WHERE parent_id = ids[i] AND parent_outcome IS NULL),
                 o AS (UPDATE {schema}.job_deps SET parent_outcome = outcomes[i] WHERE parent_id = ids[i])
            SELECT array_agg(child_id) INTO kids FROM uncounted;
            CONTINUE WHEN kids IS NULL;
            WITH moved AS (
                UPDATE {schema}.jobs j SET
                    parents_pending = j.parents_pending - 1,
                    state = {schema}.dep_next(failed, j.on_parent_failure, j.parents_pending - 1, j.run_at, at_),
                    version = j.version + CASE WHEN {schema}.dep_next(failed, j.on_parent_failure,
                        j.parents_pending - 1, j.run_at, at_) = 'waiting' THEN 0 ELSE 1 END,
                    updated_at = at_,
                    run_at = CASE WHEN {schema}.dep_next(failed, j.on_parent_failure, j.parents_pending - 1,
                        j.run_at, at_) = 'queued' THEN at_ ELSE j.run_at END,
                    finished_at = CASE WHEN {schema}.dep_next(failed, j.on_parent_failure, j.parents_pending - 1,
                        j.run_at, at_) = 'canceled' THEN at_ END,
                    parent_skipped = failed AND j.on_parent_failure = 'skip',
                    expires_at = CASE WHEN NOT failed OR j.on_parent_failure = 'run' THEN j.expires_at
                        WHEN j.result_ttl_us > 0 THEN at_ + j.result_ttl_us * interval '1 microsecond'
                        ELSE expiries[i] END,
                    last_actor = CASE WHEN {schema}.dep_next(failed, j.on_parent_failure, j.parents_pending - 1,
                        j.run_at, at_) = 'waiting' THEN j.last_actor ELSE actor END,
                    last_reason = CASE {schema}.dep_next(failed, j.on_parent_failure, j.parents_pending - 1, j.run_at, at_)
                        WHEN 'waiting' THEN j.last_reason
                        WHEN 'canceled' THEN CASE WHEN j.on_parent_failure = 'skip' THEN 'skipped: ' ELSE '' END
                            || 'parent ' || ids[i] || ' ' || outcomes[i]
                        ELSE 'parents ended (last: ' || ids[i] || ' ' || outcomes[i] || ')' END
                WHERE j.id = ANY(kids) AND j.state = 'waiting'
                RETURNING j.id, j.state, j.parent_skipped, j.has_children, j.expires_at
            )
            SELECT array_agg(id), array_agg(CASE WHEN parent_skipped THEN 'skipped' ELSE 'canceled' END),
                   array_agg(expires_at)
            INTO a, b, c FROM moved WHERE state = 'canceled' AND has_children;
            IF a IS NOT NULL THEN
                next_ids := next_ids || a; next_outcomes := next_outcomes || b; next_expiries := next_expiries || c;
            END IF;
        END LOOP;
        ids := next_ids; outcomes := next_outcomes; expiries := next_expiries;
    END LOOP;
    PERFORM set_config('hopper.releasing', 'off', true);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_release AFTER UPDATE OF state ON {schema}.jobs FOR EACH ROW
WHEN (NEW.has_children AND OLD.state <> NEW.state AND NEW.state IN ('completed', 'failed', 'canceled'))
EXECUTE FUNCTION {schema}.jobs_release();

-- A child's dependency rows go with it (a parent's stay: they record its outcome).
CREATE FUNCTION {schema}.jobs_deps_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.job_deps d USING old_rows o WHERE d.child_id = o.id AND o.on_parent_failure IS NOT NULL;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_deps_delete AFTER DELETE ON {schema}.jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_deps_delete();
