-- Whether a workflow has a step that has not ended is read from its steps along
-- jobs_workflow_id, newest first, stopping at the first such step (store/sqlite/workflows.go,
-- openStep), instead of the partial index jobs_workflow_open. SQLite rewrites a partial index's
-- entry on every update whose columns its predicate reads, so that index cost each step a
-- deletion and an insertion at its claim and a deletion at its ending, the single writer's
-- time on every step (in the workflow benchmark about a fifth of the writer's time for the
-- workflows beyond plain jobs' time). The look-up is made by the marking of ended workflows
-- and by listings of workflows by an ended state, for open workflows only; a workflow's last
-- steps are the last to end (a step's parents are inserted before it), so the walk is short.
DROP INDEX jobs_workflow_open;
