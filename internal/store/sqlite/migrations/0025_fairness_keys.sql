-- Fairness keys (issue 32): a job may carry a fairness key (a tenant, a customer); claims share
-- a queue's slots between the keys that have queued jobs instead of taking its jobs first in,
-- first out across all. jobs_fair holds every queued job by queue, key (unkeyed jobs under
-- NULL), then claim order, so that a claim reads the head of each key.
ALTER TABLE jobs ADD COLUMN fairness_key TEXT;
CREATE INDEX jobs_fair ON jobs (queue, fairness_key, priority DESC, id) WHERE state = 'queued';

-- The keys that may have queued jobs, per queue, each with when a claim last served it (a
-- counter of the queue's fair claims). A key is added when a job of it becomes queued, here,
-- and removed by the claim that finds none of its jobs queued (claim.go). A queue without keys
-- here is claimed first in, first out, as before. The unkeyed jobs of a queue with keys are
-- served under the key '', which only claims add.
CREATE TABLE fair_keys (
    queue        TEXT    NOT NULL,
    fairness_key TEXT    NOT NULL,
    served       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, fairness_key)
) WITHOUT ROWID;

CREATE TRIGGER jobs_fair_key_insert AFTER INSERT ON jobs
WHEN new.fairness_key IS NOT NULL AND new.state = 'queued'
BEGIN
    INSERT OR IGNORE INTO fair_keys (queue, fairness_key) VALUES (new.queue, new.fairness_key);
END;

CREATE TRIGGER jobs_fair_key_queued AFTER UPDATE OF state ON jobs
WHEN new.fairness_key IS NOT NULL AND new.state = 'queued' AND old.state <> 'queued'
BEGIN
    INSERT OR IGNORE INTO fair_keys (queue, fairness_key) VALUES (new.queue, new.fairness_key);
END;

-- A claim reads the least recently served keys first, and the largest served, from here.
CREATE INDEX fair_keys_served ON fair_keys (queue, served, fairness_key);
