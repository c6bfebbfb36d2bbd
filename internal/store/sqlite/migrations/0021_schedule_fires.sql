-- What a schedule's listing shows of its fires, apart from the fire step's cursor:
--
--   * fired_at: the fire time of last_job_id, the latest fire that enqueued a job (microseconds).
--     NULL while the schedule never enqueued one. last_fire_at stays the cursor the fire step
--     compare-and-sets (the latest fire time accounted for, enqueued or skipped; at creation or
--     re-timing, that moment), which listings no longer show as a fire.
--   * manual_fire_at, manual_job_id: the latest manual fire ("run now", Client.RunSchedule) and
--     its job. A manual fire leaves the cursor, next_fire_at, last_job_id and fired_at alone.
--
-- Schedules that have enqueued a job take last_fire_at as their fired_at: it is the fire time
-- of their last job unless a later fire time was skipped since (overlap, catch-up). A binary
-- from before this migration fires without setting fired_at; its fires show once a newer
-- binary fires the schedule again.
ALTER TABLE schedules ADD COLUMN fired_at INTEGER;
ALTER TABLE schedules ADD COLUMN manual_fire_at INTEGER;
ALTER TABLE schedules ADD COLUMN manual_job_id TEXT;
UPDATE schedules SET fired_at = last_fire_at WHERE last_job_id IS NOT NULL;
