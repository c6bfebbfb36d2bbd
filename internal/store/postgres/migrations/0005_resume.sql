-- Resume data: what Client.Resume hands to the next attempt of a suspended job, beside its
-- checkpoint. A new suspension clears it. A nullable column without a default: adding it
-- rewrites nothing.
ALTER TABLE {schema}.jobs ADD COLUMN resume_data bytea;
