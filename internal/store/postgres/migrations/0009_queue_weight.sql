-- A queue's fair-share weight is NULL until an operator stores one (QueueSetWeight): a process
-- then uses its own configured weight (QueueConfig.Weight, default 1), and a stored weight,
-- being fleet-wide, takes precedence. No weight could be stored before this migration, so the
-- 1s there are defaults and become NULL.
ALTER TABLE {schema}.queues ALTER COLUMN weight DROP NOT NULL, ALTER COLUMN weight DROP DEFAULT;
UPDATE {schema}.queues SET weight = NULL;
ALTER TABLE {schema}.queues ADD CONSTRAINT queues_weight_positive CHECK (weight >= 1);
