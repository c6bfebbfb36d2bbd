-- Idle nodes: a node that holds no jobs records it in its heartbeat (idle) and then stops
-- heartbeating until it runs a job again, so an idle process writes nothing. heartbeat_at of
-- an idle node is when it went idle. The leader's dead-node rescue leaves idle nodes alone
-- whatever their heartbeat's age (they hold no jobs), and removes those idle for longer than
-- store.IdleNodeTTL (24 h), so a crashed idle node is not listed for ever. Rows written before
-- this migration, and by older binaries, are not idle: they are judged by their heartbeat's
-- age, as before.
ALTER TABLE nodes ADD COLUMN idle INTEGER NOT NULL DEFAULT 0;
