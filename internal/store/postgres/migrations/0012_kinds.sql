-- Per-kind settings (docs/flow-control.md). Same table as SQLite's 0012.
--
-- kind_limits held one setting, a kind's fleet-wide cap; kinds holds every setting of a kind,
-- as queues does for a queue: the cap (NULL for none) and whether the kind is disabled (no
-- claim on any node takes its jobs; they stay queued). A row exists only while it holds a
-- setting: removing the cap of a kind that is not disabled, or enabling a kind without a cap,
-- deletes it. Existing caps are kept.
CREATE TABLE {schema}.kinds (
    kind        text        PRIMARY KEY,
    disabled    boolean     NOT NULL DEFAULT false,
    max_running integer,
    updated_at  timestamptz NOT NULL
);

INSERT INTO {schema}.kinds (kind, max_running, updated_at)
SELECT kind, max_running, updated_at FROM {schema}.kind_limits;
DROP TABLE {schema}.kind_limits;

-- During a rolling upgrade, nodes still running a binary from before this migration read caps
-- from kind_limits (and lock its rows, which locks the rows of kinds beneath): this view shows
-- them every cap, and a disabled kind as a cap of 0, so they start no job of a disabled kind
-- either. They cannot set caps through it. Nothing of this binary reads it; a later migration
-- drops it.
CREATE VIEW {schema}.kind_limits AS
SELECT kind, CASE WHEN disabled THEN 0 ELSE max_running END AS max_running, updated_at
FROM {schema}.kinds WHERE disabled OR max_running IS NOT NULL;
