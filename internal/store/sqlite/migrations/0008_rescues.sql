-- Bounded rescues (contract 3). rescues counts how often a running job was returned to the
-- queue because its worker was lost (an expired lease, a dead node, a remote worker's stream
-- closed under it); max_rescues is the job's bound. A loss that finds rescues already at
-- max_rescues fails the job with outcome worker_lost instead: a job that crashes or hangs its
-- worker becomes a dead letter instead of looping.
--
-- The bound is stored resolved, as max_attempts is: the client fills in the job's, its kind's
-- or its own default at enqueue, so the leader that rescues (any node, with any config) applies
-- the job's own bound and needs no configuration of its own. -1 means unbounded (the behaviour
-- before this migration, for those who ask for it). Rows that exist when this runs get the
-- default bound, 3, and a count of 0: old jobs are bounded from now on, with a fresh budget.
ALTER TABLE jobs ADD COLUMN rescues INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN max_rescues INTEGER NOT NULL DEFAULT 3;
