-- Resource governor (contract 15): each node's heartbeat records whether its governor holds
-- back new jobs, the queues its workers work (in process, and remote workers served through
-- it) and, of those, the queues where every one of its workers is held. Queue lists are JSON
-- arrays of names. Rows written before this migration (or by a node that has not heartbeated
-- since) list no queue, so they count for no queue's awaiting compute until their next
-- heartbeat.
ALTER TABLE nodes ADD COLUMN holding INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN queues TEXT NOT NULL DEFAULT '[]';
ALTER TABLE nodes ADD COLUMN held_queues TEXT NOT NULL DEFAULT '[]';
