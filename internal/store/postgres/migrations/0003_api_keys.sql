-- API keys. Only a hash of each key's secret is stored (package apikey); id is the key's
-- public part, used to look it up. A revoked key stays, so the server can tell "revoked" from
-- "unknown", and its name may be given to a new key.
CREATE TABLE {schema}.api_keys (
    id           text COLLATE "C" PRIMARY KEY,
    name         text        NOT NULL,
    hash         bytea       NOT NULL,
    scopes       text[]      NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE UNIQUE INDEX api_keys_live_name ON {schema}.api_keys (name) WHERE revoked_at IS NULL;
