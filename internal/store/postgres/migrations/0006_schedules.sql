-- Recurring schedules (contract 10). Same tables and columns as SQLite's 0006.
--
-- spec is a cron expression, descriptor or "@every DURATION" ('' for fixed-delay); mode is
-- 'cron', 'fixed-rate' or 'fixed-delay'; interval_us is the interval of the last two. The
-- store computes no fire times: the leader does (package schedule) and writes last_fire_at
-- (the latest fire time accounted for, compare-and-set in the fire step's transaction) and
-- next_fire_at (what the due query reads). source says who owns the definition: 'code'
-- (Config.Schedules, reconciled on start) or 'api'.
CREATE TABLE {schema}.schedules (
    name           text COLLATE "C" PRIMARY KEY,
    spec           text        NOT NULL,
    mode           text        NOT NULL CHECK (mode IN ('cron', 'fixed-rate', 'fixed-delay')),
    interval_us    bigint      NOT NULL DEFAULT 0,
    tz             text        NOT NULL,
    kind           text        NOT NULL,
    queue          text        NOT NULL,
    args           bytea       NOT NULL,
    headers        json,
    priority       integer     NOT NULL DEFAULT 0,
    max_attempts   integer     NOT NULL,
    timeout_us     bigint      NOT NULL DEFAULT 0,
    catch_up       text        NOT NULL CHECK (catch_up IN ('skip', 'last', 'all')),
    overlap        text        NOT NULL CHECK (overlap IN ('skip', 'allow')),
    jitter_us      bigint      NOT NULL DEFAULT 0,
    paused         boolean     NOT NULL DEFAULT false,
    source         text        NOT NULL CHECK (source IN ('code', 'api')),
    last_fire_at   timestamptz,
    next_fire_at   timestamptz,
    last_job_id    text COLLATE "C",
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

-- The leader's "what is due" query, every tick.
CREATE INDEX schedules_due ON {schema}.schedules (next_fire_at) WHERE NOT paused;

-- The overlap check: does a schedule have a job that has not ended? No job had a schedule_id
-- before this migration, so the index starts empty (building it still reads the table once).
CREATE INDEX jobs_schedule_live ON {schema}.jobs (schedule_id)
    WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'queued', 'running', 'suspended');
