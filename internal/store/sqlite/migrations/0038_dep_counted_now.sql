-- A round of endings records its parents' outcomes on their dependency rows in one statement
-- (deps.go: countSQL), which must tell the rows it counts down (no outcome before: their
-- parent had not ended) from those of a parent retried in place that ends again (counted at
-- its first ending: only their outcome changes). An UPDATE's RETURNING sees the row as
-- written, not as it was, so the statement writes that answer here, from the old outcome:
-- the column means something only in the rows that statement returns. It was two statements,
-- each a look-up of every parent of the round.
ALTER TABLE job_deps ADD COLUMN counted_now INTEGER;
