-- Placeholder: this version belongs to another branch of issue 33, merged separately. It is
-- here only so that this branch's migrations have no gap; drop it when merging.
SELECT 1;
