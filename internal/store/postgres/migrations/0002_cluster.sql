-- Cluster bookkeeping: registered nodes and the leader lease.
CREATE TABLE {schema}.nodes (
    id           text        PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);

-- One row: who leads, until when, and the term (grows each time the lease changes hands).
-- Expiry is judged on the database clock, never a node's.
CREATE TABLE {schema}.leader (
    id         integer PRIMARY KEY CHECK (id = 1),
    node_id    text        NOT NULL,
    term       bigint      NOT NULL,
    expires_at timestamptz NOT NULL
);
