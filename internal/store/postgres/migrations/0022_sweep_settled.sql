-- The settled windows of the sweep's walk (store.SettledWindow): ranges of job ids whose jobs
-- had all ended and none expired when the leader read them, and the earliest expiry among
-- them. The leader skips such a window until then instead of reading it again on every walk,
-- and saves them at the end of each walk that changed them, so that the next leader starts
-- where this one was instead of reading every retained job once more.
CREATE TABLE {schema}.sweep_settled (
    after_id text COLLATE "C" PRIMARY KEY,
    last_id  text COLLATE "C" NOT NULL,
    soonest  timestamptz NOT NULL
);
