-- Fairness keys (issue 32): a job may carry a fairness key (a tenant, a customer); claims share
-- a queue's slots between the keys that have queued jobs instead of taking its jobs first in,
-- first out across all. jobs_fair holds every queued job by queue, key (unkeyed jobs under
-- NULL), then claim order, so that a claim reads the head of each key.
ALTER TABLE {schema}.jobs ADD COLUMN fairness_key text;
CREATE INDEX jobs_fair ON {schema}.jobs (queue, fairness_key, priority DESC, id) WHERE state = 'queued';

-- The keys that may have queued jobs, per queue, each with when a claim last served it (a
-- counter of the queue's fair claims). A key is added when a job of it becomes queued, here,
-- and removed by the claim that finds none of its jobs queued (fair.go). A queue without keys
-- here is claimed first in, first out, as before. The unkeyed jobs of a queue with keys are
-- served under the key '', which only claims add. The triggers fire for keyed jobs only: their
-- WHEN is all an unkeyed job's insert or update pays.
CREATE TABLE {schema}.fair_keys (
    queue        text   NOT NULL,
    fairness_key text   NOT NULL,
    served       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, fairness_key)
);
CREATE INDEX fair_keys_served ON {schema}.fair_keys (queue, served, fairness_key);

CREATE FUNCTION {schema}.jobs_fair_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.fair_keys (queue, fairness_key) VALUES (NEW.queue, NEW.fairness_key)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_fair_key_insert AFTER INSERT ON {schema}.jobs FOR EACH ROW
WHEN (NEW.fairness_key IS NOT NULL AND NEW.state = 'queued') EXECUTE FUNCTION {schema}.jobs_fair_key();
CREATE TRIGGER jobs_fair_key_queued AFTER UPDATE OF state ON {schema}.jobs FOR EACH ROW
WHEN (NEW.fairness_key IS NOT NULL AND NEW.state = 'queued' AND OLD.state <> 'queued')
EXECUTE FUNCTION {schema}.jobs_fair_key();
