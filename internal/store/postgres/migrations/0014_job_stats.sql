-- Per-minute aggregates (hoppertype.MinuteStats) behind the dashboard's charts. The
-- statements that insert jobs and finish attempts add to them, one upsert per minute, queue
-- and kind per statement; w0–w9 count waits per bucket of hoppertype.WaitBounds. Each row
-- belongs to one backend (shard = pg_backend_pid()): two transactions never wait for each
-- other on a row here, even when one is an application's long transaction that enqueues
-- (EnqueueTx). StatsList sums the shards. The leader's sweep deletes rows older than 7 days.
CREATE TABLE {schema}.job_stats (
    minute    timestamptz NOT NULL,
    queue     text        NOT NULL,
    kind      text        NOT NULL,
    shard     integer     NOT NULL,
    enqueued  bigint      NOT NULL DEFAULT 0,
    completed bigint      NOT NULL DEFAULT 0,
    failed    bigint      NOT NULL DEFAULT 0,
    retried   bigint      NOT NULL DEFAULT 0,
    w0 bigint NOT NULL DEFAULT 0, w1 bigint NOT NULL DEFAULT 0, w2 bigint NOT NULL DEFAULT 0,
    w3 bigint NOT NULL DEFAULT 0, w4 bigint NOT NULL DEFAULT 0, w5 bigint NOT NULL DEFAULT 0,
    w6 bigint NOT NULL DEFAULT 0, w7 bigint NOT NULL DEFAULT 0, w8 bigint NOT NULL DEFAULT 0,
    w9 bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, kind, shard)
);
