-- Placeholder for the migration number given to another branch (issue 31, incidents), so that
-- this branch's 0025 applies in order. Drop this file when merging after that branch.
SELECT 1;
