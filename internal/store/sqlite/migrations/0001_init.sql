-- Hopper schema, SQLite dialect. Times are unix microseconds (UTC); NULL means "not set".
-- The jobs table holds the columns every contract (docs/architecture.md, "Contracts") needs,
-- including those later issues implement (group, merge, lineage, schedules, suspend deadline,
-- result TTL).
CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    args             BLOB    NOT NULL,
    headers          TEXT,
    state            TEXT    NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    token            INTEGER NOT NULL DEFAULT 0,
    -- version counts transitions; it is the seq of the newest job_events row.
    version          INTEGER NOT NULL DEFAULT 1,
    run_at           INTEGER NOT NULL,
    timeout_us       INTEGER NOT NULL DEFAULT 0,
    worker_id        TEXT,
    lease_expires_at INTEGER,
    heartbeat_at     INTEGER,
    progress_percent INTEGER NOT NULL DEFAULT 0,
    progress_message TEXT,
    result           BLOB,
    last_error       TEXT,
    last_outcome     TEXT,
    last_stack       TEXT,
    last_actor       TEXT    NOT NULL,
    last_reason      TEXT,
    checkpoint       BLOB,
    retry_policy     TEXT,
    idempotency_key  TEXT,
    group_key        TEXT,
    merge_key        TEXT,
    original_id      TEXT,
    replay_count     INTEGER NOT NULL DEFAULT 0,
    replayed_by      TEXT,
    schedule_id      TEXT,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    updated_at       INTEGER NOT NULL,
    expires_at       INTEGER,
    deadline_at      INTEGER
);

-- The claim path: queued jobs of a queue, highest priority first, then oldest (UUIDv7) first.
CREATE INDEX jobs_claim ON jobs (queue, priority DESC, id) WHERE state = 'queued';
CREATE INDEX jobs_scheduled ON jobs (run_at) WHERE state = 'scheduled';
CREATE INDEX jobs_lease ON jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_group ON jobs (group_key, id) WHERE group_key IS NOT NULL AND state IN ('running', 'queued', 'scheduled', 'suspended');
CREATE INDEX jobs_merge ON jobs (merge_key) WHERE state IN ('queued', 'scheduled') AND merge_key IS NOT NULL;
-- Listing by state: queued, scheduled and running jobs have the indexes above, completed jobs
-- are most rows (a scan in id order finds them); the rare states get their own index, so the
-- hot path (queued → running → completed) touches no state index.
CREATE INDEX jobs_state_rare ON jobs (state, id) WHERE state IN ('failed', 'canceled', 'suspended');
CREATE INDEX jobs_kind ON jobs (kind, id);
CREATE INDEX jobs_expires ON jobs (expires_at) WHERE expires_at IS NOT NULL;

-- The audit trail. Every transition is recorded in the transaction that makes it:
--   * a transition into or out of running (a claim, an attempt's end) in job_attempts: one row
--     per attempt, written when it ends, with the sequence numbers of both transitions (while
--     an attempt runs, its claim is the job row's own version, started_at and worker_id);
--   * every other transition (enqueue, promotion, cancel of a waiting job, resume, replay) in
--     job_events, one row each.
-- JobEvents merges the three by sequence number. Two rows per job on the hot path instead of
-- four keeps the audit trail cheap. Triggers write both, so no code path can forget.
CREATE TABLE job_events (
    job_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    from_state TEXT,
    to_state   TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    reason     TEXT,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

-- One row per ended attempt, keyed by the lease's fencing token.
CREATE TABLE job_attempts (
    job_id     TEXT    NOT NULL,
    token      INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    worker_id  TEXT,
    started_at INTEGER,
    ended_at   INTEGER NOT NULL,
    outcome    TEXT    NOT NULL,
    error      TEXT,
    stack      TEXT,
    start_seq  INTEGER NOT NULL, -- the claim's transition (queued → running, by the worker)
    end_seq    INTEGER NOT NULL, -- the attempt's end (running → to_state)
    to_state   TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    reason     TEXT,
    PRIMARY KEY (job_id, token)
) WITHOUT ROWID;

CREATE TRIGGER jobs_event_insert AFTER INSERT ON jobs
BEGIN
    INSERT INTO job_events (job_id, seq, at, from_state, to_state, actor, reason)
    VALUES (new.id, new.version, new.created_at, NULL, new.state, new.last_actor, new.last_reason);
END;

CREATE TRIGGER jobs_event_update AFTER UPDATE OF state ON jobs
WHEN old.state <> new.state AND old.state <> 'running' AND new.state <> 'running'
BEGIN
    INSERT INTO job_events (job_id, seq, at, from_state, to_state, actor, reason)
    VALUES (new.id, new.version, new.updated_at, old.state, new.state, new.last_actor, new.last_reason);
END;

CREATE TRIGGER jobs_attempt_end AFTER UPDATE OF state ON jobs
WHEN old.state = 'running' AND new.state <> 'running'
BEGIN
    INSERT INTO job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome, error, stack,
                              start_seq, end_seq, to_state, actor, reason)
    VALUES (new.id, old.token, old.attempt, old.worker_id, old.started_at, new.updated_at,
            coalesce(new.last_outcome, 'error'), new.last_error, new.last_stack,
            old.version, new.version, new.state, new.last_actor, new.last_reason);
END;

CREATE TRIGGER jobs_history_delete AFTER DELETE ON jobs
BEGIN
    DELETE FROM job_events WHERE job_id = old.id;
    DELETE FROM job_attempts WHERE job_id = old.id;
    DELETE FROM idempotency_keys WHERE job_id = old.id;
END;

-- Idempotency keys outlive neither their retention nor, for lookups, their job.
CREATE TABLE idempotency_keys (
    key          TEXT    PRIMARY KEY,
    job_id       TEXT    NOT NULL,
    payload_hash TEXT    NOT NULL,
    expires_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- Per-queue settings: pause, fair-share weight, fleet-wide running cap (NULL = none).
CREATE TABLE queues (
    name        TEXT PRIMARY KEY,
    paused      INTEGER NOT NULL DEFAULT 0,
    weight      INTEGER NOT NULL DEFAULT 1,
    max_running INTEGER,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- Per-kind fleet-wide running cap.
CREATE TABLE kind_limits (
    kind        TEXT PRIMARY KEY,
    max_running INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;
