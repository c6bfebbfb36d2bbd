-- Per-minute aggregates (hoppertype.MinuteStats) behind the dashboard's charts: one row per
-- minute (µs since the epoch of its start), queue and kind. The transactions that insert jobs
-- and finish attempts add to them, one upsert per row per transaction; w0–w9 count waits per
-- bucket of hoppertype.WaitBounds. The leader's sweep deletes rows older than 7 days.
CREATE TABLE job_stats (
    minute    INTEGER NOT NULL,
    queue     TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    enqueued  INTEGER NOT NULL DEFAULT 0,
    completed INTEGER NOT NULL DEFAULT 0,
    failed    INTEGER NOT NULL DEFAULT 0,
    retried   INTEGER NOT NULL DEFAULT 0,
    w0 INTEGER NOT NULL DEFAULT 0, w1 INTEGER NOT NULL DEFAULT 0, w2 INTEGER NOT NULL DEFAULT 0,
    w3 INTEGER NOT NULL DEFAULT 0, w4 INTEGER NOT NULL DEFAULT 0, w5 INTEGER NOT NULL DEFAULT 0,
    w6 INTEGER NOT NULL DEFAULT 0, w7 INTEGER NOT NULL DEFAULT 0, w8 INTEGER NOT NULL DEFAULT 0,
    w9 INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, kind)
) WITHOUT ROWID;
