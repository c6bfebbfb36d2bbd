-- A workflow is marked ended once (issue 33, docs/workflows.md#state): state is NULL while it
-- is open, then completed, failed or canceled, with ended_at its last step's ending. The
-- leader's maintenance marks the open workflows whose steps have all ended (workflows_open,
-- oldest first; jobs_workflow_open tells in one look-up whether a step has not ended); a
-- cancel marks its workflow itself; a retry in place of a step opens its workflow again.
-- Listings by an ended state read workflows_ended.
ALTER TABLE {schema}.workflows
    ADD COLUMN state text,
    ADD COLUMN ended_at timestamptz;
CREATE INDEX workflows_open ON {schema}.workflows (id) WHERE state IS NULL;
CREATE INDEX workflows_ended ON {schema}.workflows (state, id) WHERE state IS NOT NULL;
CREATE INDEX jobs_workflow_open ON {schema}.jobs (workflow_id)
    WHERE workflow_id IS NOT NULL AND state IN ('waiting', 'scheduled', 'queued', 'running', 'suspended');

-- Workflows that ended before this version are marked here, not counted by the first passes.
UPDATE {schema}.workflows w SET state = s.state, ended_at = s.ended_at
FROM (SELECT j.workflow_id AS id,
        CASE WHEN count(*) FILTER (WHERE j.state = 'failed') > 0 THEN 'failed'
             WHEN count(*) FILTER (WHERE j.state = 'canceled') > 0 THEN 'canceled' ELSE 'completed' END AS state,
        max(j.finished_at) AS ended_at
      FROM {schema}.jobs j WHERE j.workflow_id IS NOT NULL
      GROUP BY j.workflow_id
      HAVING count(*) FILTER (WHERE j.state IN ('waiting', 'scheduled', 'queued', 'running', 'suspended')) = 0) s
WHERE w.id = s.id;
