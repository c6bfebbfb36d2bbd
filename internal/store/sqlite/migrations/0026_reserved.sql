-- Placeholder for a version another branch of issue 32 takes (migration versions have no gaps):
-- the merge replaces this file with that branch's migration of the same version.
SELECT 1;
