-- Dependencies (issue 33, docs/workflows.md): a job inserted with parents waits (state
-- waiting) until they have all ended. job_deps holds one row per (parent, child), keyed by
-- parent for the ending's look-up; parent_outcome is how the parent ended (completed, failed,
-- canceled, skipped), NULL while it runs. On the jobs row: has_children flags a parent (set by
-- its child's insert), so an ending looks up children only for flagged jobs; parents_pending
-- counts a waiting child's unended parents; on_parent_failure is a child's policy (NULL for a
-- job without parents); parent_skipped marks a job its skip policy canceled, which its own
-- children count as succeeded.
ALTER TABLE jobs ADD COLUMN has_children INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN parents_pending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN on_parent_failure TEXT;
ALTER TABLE jobs ADD COLUMN parent_skipped INTEGER NOT NULL DEFAULT 0;

CREATE TABLE job_deps (
    parent_id      TEXT NOT NULL,
    child_id       TEXT NOT NULL,
    parent_outcome TEXT,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
CREATE INDEX job_deps_child ON job_deps (child_id);

-- Listing waiting jobs: a rare state with its own index, as jobs_state_rare for the others.
CREATE INDEX jobs_waiting ON jobs (id) WHERE state = 'waiting';

-- A child's dependency rows go with it (a parent's stay: they record its outcome).
CREATE TRIGGER jobs_deps_delete AFTER DELETE ON jobs
WHEN old.on_parent_failure IS NOT NULL
BEGIN
    DELETE FROM job_deps WHERE child_id = old.id;
END;
