-- The sweep walks jobs in id order (store.Sweeper), so no index on expires_at: that index
-- took an entry for every job that ended, on the hot path, to serve a background chore.
DROP INDEX {schema}.jobs_expires;
