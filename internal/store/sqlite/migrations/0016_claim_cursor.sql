-- PostgreSQL's migration 0016 makes its queue wake-ups carry the smallest id of the jobs that
-- became claimable, for its claim cursor. SQLite pushes no notifications and keeps no dead
-- index entries for a claim to walk, so its schema does not change: this migration keeps the
-- two stores' schema versions equal.
SELECT 1;
