-- Workflows (issue 33, docs/workflows.md): a named set of jobs inserted in one transaction.
-- Each step's job carries its workflow's id and its step name; the index holds only such jobs,
-- so a job outside a workflow costs it nothing. The workflow's state is derived from its steps
-- on every read; the table keeps what a listing shows beside it.
ALTER TABLE jobs ADD COLUMN workflow_id TEXT;
ALTER TABLE jobs ADD COLUMN workflow_step TEXT;
CREATE INDEX jobs_workflow ON jobs (workflow_id) WHERE workflow_id IS NOT NULL;

CREATE TABLE workflows (
    id         TEXT PRIMARY KEY,
    name       TEXT    NOT NULL,
    steps      INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX workflows_name ON workflows (name, id);

-- A workflow goes with its last step (removed by the sweep once its result TTL passed).
CREATE TRIGGER jobs_workflow_delete AFTER DELETE ON jobs
WHEN old.workflow_id IS NOT NULL
BEGIN
    DELETE FROM workflows WHERE id = old.workflow_id
        AND NOT EXISTS (SELECT 1 FROM jobs WHERE workflow_id = old.workflow_id);
END;
