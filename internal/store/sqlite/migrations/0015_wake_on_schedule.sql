-- PostgreSQL's migration 0015 makes its triggers announce the jobs that become scheduled and
-- the schedules that change, so an idle leader there need not poll. SQLite pushes no
-- notifications (its leader polls every second, reading only), so its schema does not change:
-- this migration keeps the two stores' schema versions equal.
SELECT 1;
