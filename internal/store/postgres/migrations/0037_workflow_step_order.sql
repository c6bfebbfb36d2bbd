-- A page of a workflow's steps (WorkflowSteps: ORDER BY id after a cursor) walks this index
-- from the cursor and stops after a page, where jobs_workflow (workflow_id alone) made it sort
-- every step of the workflow for each page. It serves every look-up by workflow_id that
-- jobs_workflow served, so that one goes.
CREATE INDEX jobs_workflow_id ON {schema}.jobs (workflow_id, id) WHERE workflow_id IS NOT NULL;
DROP INDEX {schema}.jobs_workflow;
