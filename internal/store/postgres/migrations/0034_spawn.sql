-- Fan-out at run time (issue 33, docs/workflows.md): a running step adds jobs to its workflow
-- under step names, and a spawn that names a step already there gets that job back (a retried
-- attempt spawns nothing twice). A step name names one job of its workflow: this index finds it
-- and keeps it so, also against two spawns of one name in concurrent transactions. Only jobs of
-- a workflow are in it.
CREATE UNIQUE INDEX jobs_workflow_step ON {schema}.jobs (workflow_id, workflow_step) WHERE workflow_id IS NOT NULL;
