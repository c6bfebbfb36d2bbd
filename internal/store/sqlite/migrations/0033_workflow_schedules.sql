-- A schedule can start a workflow (issue 33, docs/schedules.md): its template, as JSON, instead
-- of a job's kind and args, and the newest workflow a fire enqueued. Each fire time's workflow
-- carries the fire time's key, unique, so that a fire time starts at most one workflow.
ALTER TABLE schedules ADD COLUMN workflow TEXT;
ALTER TABLE schedules ADD COLUMN last_workflow_id TEXT;
ALTER TABLE workflows ADD COLUMN fire_key TEXT;
CREATE UNIQUE INDEX workflows_fire_key ON workflows (fire_key) WHERE fire_key IS NOT NULL;
