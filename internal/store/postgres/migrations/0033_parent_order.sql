-- Results passed along (issue 33, docs/workflows.md): a child reads its parents' results in
-- the order it named them. parent_index is the parent's place in the child's after list (a
-- parent named twice counts at its first place); NULL for dependencies recorded before this
-- migration, which are read after the others, in parent id order. A column without a default:
-- adding it rewrites nothing.
ALTER TABLE {schema}.job_deps ADD COLUMN parent_index integer;
