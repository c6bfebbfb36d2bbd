-- API keys. Only a hash of each key's secret is stored (package apikey); id is the key's
-- public part, used to look it up. Scopes are a JSON array of strings. A revoked key stays,
-- so the server can tell "revoked" from "unknown", and its name may be given to a new key.
CREATE TABLE api_keys (
    id           TEXT    PRIMARY KEY,
    name         TEXT    NOT NULL,
    hash         BLOB    NOT NULL,
    scopes       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
) WITHOUT ROWID;

CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
