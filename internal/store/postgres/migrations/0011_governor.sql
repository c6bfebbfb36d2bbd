-- Resource governor (contract 15): each node's heartbeat records whether its governor holds
-- back new jobs, the queues its workers work (in process, and remote workers served through
-- it) and, of those, the queues where every one of its workers is held. Rows written before
-- this migration (or by a node that has not heartbeated since) list no queue, so they count
-- for no queue's awaiting compute until their next heartbeat.
ALTER TABLE {schema}.nodes
    ADD COLUMN holding     boolean NOT NULL DEFAULT false,
    ADD COLUMN queues      text[]  NOT NULL DEFAULT '{}',
    ADD COLUMN held_queues text[]  NOT NULL DEFAULT '{}';
