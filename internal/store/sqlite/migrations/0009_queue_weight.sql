-- A queue's fair-share weight is NULL until an operator stores one (QueueSetWeight): a process
-- then uses its own configured weight (QueueConfig.Weight, default 1), and a stored weight,
-- being fleet-wide, takes precedence. No weight could be stored before this migration, so the
-- 1s there are defaults and become NULL. SQLite cannot drop a NOT NULL constraint in place:
-- the (small) table is rebuilt.
CREATE TABLE queues_new (
    name        TEXT PRIMARY KEY,
    paused      INTEGER NOT NULL DEFAULT 0,
    weight      INTEGER CHECK (weight >= 1),
    max_running INTEGER,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO queues_new (name, paused, weight, max_running, updated_at)
    SELECT name, paused, NULL, max_running, updated_at FROM queues;
DROP TABLE queues;
ALTER TABLE queues_new RENAME TO queues;
