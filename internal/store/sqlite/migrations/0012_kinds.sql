-- Per-kind settings (docs/flow-control.md). kind_limits held one setting, a kind's fleet-wide
-- cap; kinds holds every setting of a kind, as queues does for a queue: the cap (NULL for none)
-- and whether the kind is disabled (no claim takes its jobs; they stay queued). A row exists
-- only while it holds a setting: removing the cap of a kind that is not disabled, or enabling
-- a kind without a cap, deletes it. Existing caps are kept.
CREATE TABLE kinds (
    kind        TEXT PRIMARY KEY,
    disabled    INTEGER NOT NULL DEFAULT 0,
    max_running INTEGER,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO kinds (kind, max_running, updated_at) SELECT kind, max_running, updated_at FROM kind_limits;
DROP TABLE kind_limits;

-- A process still running a binary from before this migration (it opened the file before a
-- newer one migrated it) reads caps from kind_limits: this view shows it every cap, and a
-- disabled kind as a cap of 0, so it starts no job of a disabled kind either. It cannot set
-- caps through the view. Nothing of this binary reads it; a later migration drops it.
CREATE VIEW kind_limits AS
SELECT kind, CASE WHEN disabled THEN 0 ELSE max_running END AS max_running, updated_at
FROM kinds WHERE disabled OR max_running IS NOT NULL;
