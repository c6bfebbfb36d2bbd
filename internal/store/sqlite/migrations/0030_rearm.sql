-- Dependencies (docs/workflows.md#retrying-a-failed-parent): canceled_by names the parent whose
-- failure (or cancel) canceled the job by its policy cancel, directly or down a cascade; NULL
-- for every other job, a job canceled by a user among them. A retry in place of that parent
-- puts the job back to waiting, and the jobs it canceled in turn after it.
ALTER TABLE jobs ADD COLUMN canceled_by TEXT;
