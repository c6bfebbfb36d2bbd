-- Recurring schedules (contract 10). Times are unix microseconds, durations microseconds.
--
-- spec is a cron expression, descriptor or "@every DURATION" ('' for fixed-delay); mode is
-- 'cron', 'fixed-rate' or 'fixed-delay'; interval_us is the interval of the last two. The
-- store computes no fire times: the leader does (package schedule) and writes last_fire_at
-- (the latest fire time accounted for, compare-and-set in the fire step's transaction) and
-- next_fire_at (what the due query reads). source says who owns the definition: 'code'
-- (Config.Schedules, reconciled on start) or 'api'.
CREATE TABLE schedules (
    name           TEXT    PRIMARY KEY,
    spec           TEXT    NOT NULL,
    mode           TEXT    NOT NULL CHECK (mode IN ('cron', 'fixed-rate', 'fixed-delay')),
    interval_us    INTEGER NOT NULL DEFAULT 0,
    tz             TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    queue          TEXT    NOT NULL,
    args           BLOB    NOT NULL,
    headers        TEXT,
    priority       INTEGER NOT NULL DEFAULT 0,
    max_attempts   INTEGER NOT NULL,
    timeout_us     INTEGER NOT NULL DEFAULT 0,
    catch_up       TEXT    NOT NULL CHECK (catch_up IN ('skip', 'last', 'all')),
    overlap        TEXT    NOT NULL CHECK (overlap IN ('skip', 'allow')),
    jitter_us      INTEGER NOT NULL DEFAULT 0,
    paused         INTEGER NOT NULL DEFAULT 0,
    source         TEXT    NOT NULL CHECK (source IN ('code', 'api')),
    last_fire_at   INTEGER,
    next_fire_at   INTEGER,
    last_job_id    TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) WITHOUT ROWID;

-- The leader's "what is due" query, every tick.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = 0;

-- The overlap check: does a schedule have a job that has not ended?
CREATE INDEX jobs_schedule_live ON jobs (schedule_id)
    WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'queued', 'running', 'suspended');
