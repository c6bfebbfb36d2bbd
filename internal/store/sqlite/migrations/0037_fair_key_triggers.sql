-- The triggers that add a fairness key to fair_keys when a job of it becomes queued add it
-- only when it is missing (NOT EXISTS) instead of relying on INSERT OR IGNORE. The hot writes
-- to jobs (finish.go: finishSetSQL) run as UPDATE OR FAIL, which spares SQLite a statement
-- journal per statement; and a statement's conflict clause overrides those of the statements
-- of the triggers it fires, which would have turned the OR IGNORE here into OR FAIL: a job
-- given back to its queue while its key was listed would have failed.
DROP TRIGGER jobs_fair_key_insert;
CREATE TRIGGER jobs_fair_key_insert AFTER INSERT ON jobs
WHEN new.fairness_key IS NOT NULL AND new.state = 'queued'
BEGIN
    INSERT INTO fair_keys (queue, fairness_key) SELECT new.queue, new.fairness_key
    WHERE NOT EXISTS (SELECT 1 FROM fair_keys WHERE queue = new.queue AND fairness_key = new.fairness_key);
END;

DROP TRIGGER jobs_fair_key_queued;
CREATE TRIGGER jobs_fair_key_queued AFTER UPDATE OF state ON jobs
WHEN new.fairness_key IS NOT NULL AND new.state = 'queued' AND old.state <> 'queued'
BEGIN
    INSERT INTO fair_keys (queue, fairness_key) SELECT new.queue, new.fairness_key
    WHERE NOT EXISTS (SELECT 1 FROM fair_keys WHERE queue = new.queue AND fairness_key = new.fairness_key);
END;
