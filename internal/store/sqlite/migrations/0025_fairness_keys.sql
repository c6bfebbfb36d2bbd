-- Fairness keys (issue 32): a job may carry a fairness key (a tenant, a customer); claims share
-- a queue's slots between the keys that have queued jobs instead of taking its jobs first in,
-- first out across all. jobs_fair holds every queued job by queue, key (unkeyed jobs under
-- NULL), then claim order, so that a claim reads the head of each key.
ALTER TABLE jobs ADD COLUMN fairness_key TEXT;
CREATE INDEX jobs_fair ON jobs (queue, fairness_key, priority DESC, id) WHERE state = 'queued';
