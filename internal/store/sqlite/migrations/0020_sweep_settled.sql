-- The settled windows of the sweep's walk (store.SettledWindow): ranges of job ids whose jobs
-- had all ended and none expired when the leader read them, and the earliest expiry among
-- them (microseconds). The leader skips such a window until then instead of reading it again
-- on every walk, and saves them at the end of each walk that changed them, so that the next
-- leader starts where this one was instead of reading every retained job once more.
CREATE TABLE sweep_settled (
    after_id TEXT PRIMARY KEY,
    last_id  TEXT NOT NULL,
    soonest  INTEGER NOT NULL
) WITHOUT ROWID;
