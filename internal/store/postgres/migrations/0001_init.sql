-- Hopper schema, PostgreSQL dialect. {schema} is replaced by the configured schema, quoted, so
-- every name is qualified and nothing depends on the session's search_path (the store also runs
-- inside applications' own transactions). Same tables and columns as the SQLite schema.
--
-- Payloads (args, result, checkpoint) are bytea: opaque bytes kept exactly as given (json would
-- keep the text too but parse it on every insert and reject bytes that are not valid UTF-8;
-- jsonb reorders keys and drops duplicates). Headers are json, not jsonb: jsonb refuses
-- "\u0000", which a header value may hold. Retry policies are numbers only: jsonb.
-- Job ids compare byte-wise (COLLATE "C") whatever the database's collation: UUIDv7 text
-- then sorts by creation time, as in SQLite, and comparisons are cheaper.
CREATE TABLE {schema}.jobs (
    id               text COLLATE "C" PRIMARY KEY,
    kind             text        NOT NULL,
    queue            text        NOT NULL,
    priority         integer     NOT NULL DEFAULT 0,
    args             bytea       NOT NULL,
    headers          json,
    state            text        NOT NULL CHECK (state IN
                         ('scheduled', 'queued', 'running', 'suspended', 'completed', 'failed', 'canceled')),
    attempt          integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL,
    token            bigint      NOT NULL DEFAULT 0,
    -- version counts transitions; it is the seq of the newest job_events row.
    version          bigint      NOT NULL DEFAULT 1,
    run_at           timestamptz NOT NULL,
    timeout_us       bigint      NOT NULL DEFAULT 0,
    worker_id        text,
    lease_expires_at timestamptz,
    heartbeat_at     timestamptz,
    progress_percent integer     NOT NULL DEFAULT 0,
    progress_message text,
    result           bytea,
    last_error       text,
    last_outcome     text,
    last_stack       text,
    last_actor       text        NOT NULL,
    last_reason      text,
    checkpoint       bytea,
    retry_policy     jsonb,
    idempotency_key  text,
    group_key        text,
    merge_key        text,
    original_id      text COLLATE "C",
    replay_count     integer     NOT NULL DEFAULT 0,
    replayed_by      text,
    schedule_id      text,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz NOT NULL,
    expires_at       timestamptz,
    deadline_at      timestamptz
);

-- The claim path: queued jobs of a queue, highest priority first, then oldest (UUIDv7) first.
-- Partial indexes stay as small as the live work however many finished rows the table holds.
CREATE INDEX jobs_claim ON {schema}.jobs (queue, priority DESC, id) WHERE state = 'queued';
CREATE INDEX jobs_scheduled ON {schema}.jobs (run_at) WHERE state = 'scheduled';
CREATE INDEX jobs_lease ON {schema}.jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_group ON {schema}.jobs (group_key, id)
    WHERE group_key IS NOT NULL AND state IN ('running', 'queued', 'scheduled', 'suspended');
CREATE INDEX jobs_group_running ON {schema}.jobs (group_key) WHERE state = 'running' AND group_key IS NOT NULL;
CREATE INDEX jobs_merge ON {schema}.jobs (merge_key) WHERE state IN ('queued', 'scheduled') AND merge_key IS NOT NULL;
-- Listing by state: the rare states get their own index, so the hot path
-- (queued → running → completed) touches no state index.
CREATE INDEX jobs_state_rare ON {schema}.jobs (state, id) WHERE state IN ('failed', 'canceled', 'suspended');
-- (no kind index: every non-HOT update would add an entry to it)
CREATE INDEX jobs_expires ON {schema}.jobs (expires_at) WHERE expires_at IS NOT NULL;

-- The audit trail, written by triggers so no code path can forget it. A transition into or out
-- of running (a claim, an attempt's end) is recorded in job_attempts, one row per attempt
-- written when it ends, with both transitions' sequence numbers (while an attempt runs, its
-- claim is the job row's own version, started_at and worker_id); every other transition has
-- its own job_events row. JobEvents merges them by sequence number: two rows per job on the
-- hot path instead of four.
CREATE TABLE {schema}.job_events (
    job_id     text COLLATE "C" NOT NULL,
    seq        bigint      NOT NULL,
    at         timestamptz NOT NULL,
    from_state text,
    to_state   text        NOT NULL,
    actor      text        NOT NULL,
    reason     text,
    PRIMARY KEY (job_id, seq)
);

-- One row per ended attempt, keyed by the lease's fencing token.
CREATE TABLE {schema}.job_attempts (
    job_id     text COLLATE "C" NOT NULL,
    token      bigint      NOT NULL,
    attempt    integer     NOT NULL,
    worker_id  text,
    started_at timestamptz,
    ended_at   timestamptz NOT NULL,
    outcome    text        NOT NULL,
    error      text,
    stack      text,
    start_seq  bigint      NOT NULL, -- the claim's transition (queued → running, by the worker)
    end_seq    bigint      NOT NULL, -- the attempt's end (running → to_state)
    to_state   text        NOT NULL,
    actor      text        NOT NULL,
    reason     text,
    PRIMARY KEY (job_id, token)
);

-- Idempotency keys outlive neither their retention nor, for lookups, their job.
CREATE TABLE {schema}.idempotency_keys (
    key          text        PRIMARY KEY,
    job_id       text COLLATE "C" NOT NULL,
    payload_hash text        NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX idempotency_keys_expires ON {schema}.idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_job ON {schema}.idempotency_keys (job_id);

-- Per-queue settings: pause, fair-share weight, fleet-wide running cap (NULL = none).
CREATE TABLE {schema}.queues (
    name        text        PRIMARY KEY,
    paused      boolean     NOT NULL DEFAULT false,
    weight      integer     NOT NULL DEFAULT 1,
    max_running integer,
    updated_at  timestamptz NOT NULL
);

-- Per-kind fleet-wide running cap.
CREATE TABLE {schema}.kind_limits (
    kind        text        PRIMARY KEY,
    max_running integer     NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- History triggers. They are statement-level with transition tables: a batch that inserts or
-- updates 1,000 jobs costs one INSERT … SELECT per history table, not 1,000 trigger calls.
--
-- They also wake workers: jobs that become queued (insert, promotion, rescue, release) send
-- one NOTIFY per distinct queue on the channel '<schema>_jobs' with payload 'q:<queue>'; a
-- running job that is canceled sends 'c:<job id>'. PostgreSQL delivers notifications at commit
-- (none for a rolled-back transaction) and folds identical ones within a transaction, so a
-- transaction sends at most one per queue however many statements it runs.
CREATE FUNCTION {schema}.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
    SELECT id, version, created_at, NULL, state, last_actor, last_reason FROM new_rows;
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_jobs', 'q:' || q.queue)
    FROM (SELECT DISTINCT queue FROM new_rows WHERE state = 'queued') q;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_event_insert AFTER INSERT ON {schema}.jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_after_insert();

-- Every UPDATE statement fires it (a trigger with transition tables can't name columns), but
-- heartbeats and lease extensions change no state and leave "changed" empty.
-- Transition tables have no statistics or indexes: without the SET, the planner joins old and
-- new rows with a nested loop, quadratic in the batch (130 ms for a 700-job completion batch).
CREATE FUNCTION {schema}.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off AS $$
DECLARE
    sent bigint;
BEGIN
    WITH changed AS MATERIALIZED (
        SELECT n.id, n.queue, n.version, n.updated_at, o.state AS from_state, n.state AS to_state,
               n.last_actor, n.last_reason, n.last_outcome, n.last_error, n.last_stack,
               o.token, o.attempt, o.worker_id, o.started_at, o.version AS old_version
        FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE o.state <> n.state
    ), events AS (
        INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
        SELECT id, version, updated_at, from_state, to_state, last_actor, last_reason FROM changed
        WHERE from_state <> 'running' AND to_state <> 'running'
    ), attempts AS (
        INSERT INTO {schema}.job_attempts (job_id, token, attempt, worker_id, started_at, ended_at, outcome,
                                           error, stack, start_seq, end_seq, to_state, actor, reason)
        SELECT id, token, attempt, worker_id, started_at, updated_at, coalesce(last_outcome, 'error'),
               last_error, last_stack, old_version, version, to_state, last_actor, last_reason
        FROM changed WHERE from_state = 'running'
    )
    SELECT count(pg_notify(TG_TABLE_SCHEMA || '_jobs', p.payload)) INTO sent FROM (
        SELECT DISTINCT 'q:' || queue AS payload FROM changed WHERE to_state = 'queued'
        UNION ALL
        SELECT 'c:' || id FROM changed WHERE from_state = 'running' AND to_state = 'canceled'
    ) p;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_event_update AFTER UPDATE ON {schema}.jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_after_update();

CREATE FUNCTION {schema}.jobs_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.job_events e USING old_rows o WHERE e.job_id = o.id;
    DELETE FROM {schema}.job_attempts a USING old_rows o WHERE a.job_id = o.id;
    DELETE FROM {schema}.idempotency_keys k USING old_rows o WHERE k.job_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_history_delete AFTER DELETE ON {schema}.jobs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.jobs_after_delete();
