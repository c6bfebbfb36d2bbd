-- Workflows (issue 33, docs/workflows.md): a named set of jobs inserted in one transaction.
-- Each step's job carries its workflow's id and its step name; the index holds only such jobs,
-- so a job outside a workflow costs it nothing. The workflow's state is derived from its steps
-- on every read; the table keeps what a listing shows beside it.
ALTER TABLE {schema}.jobs
    ADD COLUMN workflow_id text COLLATE "C",
    ADD COLUMN workflow_step text;
CREATE INDEX jobs_workflow ON {schema}.jobs (workflow_id) WHERE workflow_id IS NOT NULL;

CREATE TABLE {schema}.workflows (
    id         text COLLATE "C" PRIMARY KEY,
    name       text        NOT NULL,
    steps      integer     NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX workflows_name ON {schema}.workflows (name, id);

-- A workflow goes with its last step (removed by the sweep once its result TTL passed). Steps
-- deleted by concurrent statements may each see the other's still there and leave the row: a
-- workflow without a live step is gone for readers all the same (it joins no step).
CREATE FUNCTION {schema}.jobs_workflow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.workflows w
    WHERE w.id IN (SELECT DISTINCT o.workflow_id FROM old_rows o WHERE o.workflow_id IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.workflow_id = w.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_workflow_delete AFTER DELETE ON {schema}.jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_workflow_delete();
