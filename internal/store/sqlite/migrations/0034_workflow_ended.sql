-- A workflow is marked ended once (issue 33, docs/workflows.md#state): state is NULL while it
-- is open, then completed, failed or canceled, with ended_at its last step's ending. The
-- leader's maintenance marks the open workflows whose steps have all ended (workflows_open,
-- oldest first; jobs_workflow_open tells in one look-up whether a step has not ended); a
-- cancel marks its workflow itself; a retry in place of a step opens its workflow again.
-- Listings by an ended state read workflows_ended.
ALTER TABLE workflows ADD COLUMN state TEXT;
ALTER TABLE workflows ADD COLUMN ended_at INTEGER;
CREATE INDEX workflows_open ON workflows (id) WHERE state IS NULL;
CREATE INDEX workflows_ended ON workflows (state, id) WHERE state IS NOT NULL;
CREATE INDEX jobs_workflow_open ON jobs (workflow_id)
    WHERE workflow_id IS NOT NULL AND state IN ('waiting', 'scheduled', 'queued', 'running', 'suspended');

-- Workflows that ended before this version are marked here, not counted by the first passes.
UPDATE workflows SET
    state = (SELECT CASE WHEN sum(CASE WHEN j.state = 'failed' THEN 1 ELSE 0 END) > 0 THEN 'failed'
        WHEN sum(CASE WHEN j.state = 'canceled' THEN 1 ELSE 0 END) > 0 THEN 'canceled' ELSE 'completed' END
        FROM jobs j WHERE j.workflow_id = workflows.id),
    ended_at = (SELECT max(j.finished_at) FROM jobs j WHERE j.workflow_id = workflows.id)
WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = workflows.id)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = workflows.id
      AND j.state IN ('waiting', 'scheduled', 'queued', 'running', 'suspended'));
