-- A workflow's step names and the order of its steps (issue 33, docs/workflows.md) move from
-- indexes on jobs to workflow_steps, a row per step written once, when the step is inserted.
-- A claim or an ending rewrites a job's row without HOT (it changes indexed columns), and
-- every index on jobs then takes an entry for the new version, whether its own columns changed
-- or not: jobs_workflow_step (unique, so each entry also checked for a duplicate) and
-- jobs_workflow_id took two entries per step and state change that no plain job pays. Here
-- each index takes one entry per step, ever. A step's name stays on its job (workflow_step),
-- which is what a job's reads return; a name names one step of its workflow through
-- workflow_steps_name, also against two spawns of one name in concurrent transactions.
-- jobs_workflow_open stays on jobs: whether a workflow has a step that has not ended is read
-- from it in one look-up, and it takes one entry per step (at its claim) besides its insert.
CREATE TABLE {schema}.workflow_steps (
    workflow_id text COLLATE "C" NOT NULL,
    job_id      text COLLATE "C" NOT NULL,
    step        text NOT NULL,
    PRIMARY KEY (workflow_id, job_id)
);
CREATE UNIQUE INDEX workflow_steps_name ON {schema}.workflow_steps (workflow_id, step);

INSERT INTO {schema}.workflow_steps (workflow_id, job_id, step)
SELECT workflow_id, id, workflow_step FROM {schema}.jobs WHERE workflow_id IS NOT NULL;

DROP INDEX {schema}.jobs_workflow_step;
DROP INDEX {schema}.jobs_workflow_id;

-- A step's row goes with its job; a workflow goes with its last step (as before: steps
-- deleted by concurrent statements may each see the other's still there and leave the row,
-- which joins no step and is gone for readers all the same). The statements' plans are made
-- once per session, whatever the size of the first deletion: sequential scans are priced out,
-- so that a sweep of many jobs never reads all of workflow_steps.
CREATE OR REPLACE FUNCTION {schema}.jobs_workflow_delete() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off AS $$
BEGIN
    DELETE FROM {schema}.workflow_steps s USING old_rows o
    WHERE o.workflow_id IS NOT NULL AND s.workflow_id = o.workflow_id AND s.job_id = o.id;
    DELETE FROM {schema}.workflows w
    WHERE w.id IN (SELECT DISTINCT o.workflow_id FROM old_rows o WHERE o.workflow_id IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM {schema}.workflow_steps s WHERE s.workflow_id = w.id);
    RETURN NULL;
END
$$;
