-- What the leader has due (LeaderDue), read every few seconds by every process that does not
-- lead: the earliest deadline of a suspended job is an index seek, and the leader row keeps
-- when the sweep's last complete walk of the jobs began (swept_before), which every process's
-- read counts expiries after: everything that expired before it was deleted by that walk or
-- is kept by an idempotency key. Each election raises it to the walk its process knows of,
-- never lowers it.
CREATE INDEX jobs_deadline ON {schema}.jobs (deadline_at) WHERE state = 'suspended';
ALTER TABLE {schema}.leader ADD COLUMN swept_before timestamptz;
