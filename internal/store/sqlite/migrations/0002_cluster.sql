-- Cluster bookkeeping: registered nodes and the leader lease.
CREATE TABLE nodes (
    id           TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row: who leads, until when, and the term (grows each time the lease changes hands).
CREATE TABLE leader (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    node_id    TEXT    NOT NULL,
    term       INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
