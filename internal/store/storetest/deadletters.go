package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Contract 11: dead letters are failed jobs; replays create new jobs with lineage and an
// audit row, in one transaction, and never touch their source.
func testDeadLetters(t *testing.T, opener Opener) {
	parallel(t, opener, "Stats", deadLettersStats)
	parallel(t, opener, "ReplayCopiesTheJob", deadLettersReplayCopies)
	parallel(t, opener, "ReplayLineage", deadLettersReplayLineage)
	parallel(t, opener, "ReplayOnlyFailed", deadLettersReplayOnlyFailed)
	parallel(t, opener, "ReplayMany", deadLettersReplayMany)
	parallel(t, opener, "ReplayManyFilters", deadLettersReplayManyFilters)
	parallel(t, opener, "ReplayManyConcurrent", deadLettersReplayManyConcurrent)
	parallel(t, opener, "ReplayList", deadLettersReplayList)
	parallel(t, opener, "StatsLeaveOutReplayed", deadLettersStatsLeaveOutReplayed)
	parallel(t, opener, "CountsAgreeWithTheListing", deadLettersCountsAgreeWithTheListing)
}

// deadLetters is the bundle's store as a DeadLetterStore: every store keeps dead letters.
func (b *bundle) deadLetters(t *testing.T) store.DeadLetterStore {
	t.Helper()
	return b.store
}

func (b *bundle) replay(t *testing.T, id, by string) *store.Replay {
	t.Helper()
	r, err := b.deadLetters(t).JobReplay(t.Context(), &store.ReplayParams{SourceID: id, NewID: newID(t), By: by,
		Actor: hoppertype.ActorOperator, Reason: "replay"})
	require.NoError(t, err)
	return r
}

func (b *bundle) replayMany(t *testing.T, p store.ReplayManyParams, limit int) []*store.Replay {
	t.Helper()
	for range limit {
		p.NewIDs = append(p.NewIDs, newID(t))
	}
	p.By, p.Actor, p.Reason = "ops", hoppertype.ActorOperator, "bulk replay"
	res, err := b.deadLetters(t).JobReplayMany(t.Context(), &p)
	require.NoError(t, err)
	return res.Replays
}

// failedIn returns a job of queue that failed now.
func (b *bundle) failedIn(t *testing.T, queue string, opts ...option) *hoppertype.JobRow {
	t.Helper()
	job := b.insert(t, append(opts, inQueue(queue))...)
	claimed := b.claimOne(t, queue)
	require.Equal(t, job.ID, claimed.ID)
	require.NoError(t, b.finish(t, finishing(claimed, hoppertype.StateFailed)))
	return b.get(t, job.ID)
}

func sources(rs []*store.Replay) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.SourceJobID
	}
	return out
}

// Stats count the failed jobs (not completed, not expired) and find the oldest finish.
func deadLettersStats(t *testing.T, b *bundle) {
	st, err := b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Count)
	require.True(t, st.Oldest.IsZero())

	oldest := b.clock.Now()
	b.jobIn(t, hoppertype.StateFailed)
	b.clock.Advance(time.Minute)
	b.jobIn(t, hoppertype.StateFailed)
	b.jobIn(t, hoppertype.StateCompleted)
	b.jobIn(t, hoppertype.StateCanceled)
	b.expiring(t, hoppertype.StateFailed, time.Minute)
	st, err = b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(3), st.Count)
	sameTime(t, oldest, st.Oldest, "oldest")

	b.clock.Advance(time.Minute)
	st, err = b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Count, "an expired dead letter is not counted")
}

// A replay is a new queued job with the source's work (kind, queue, args, headers, priority,
// budget, timeout, retry policy, group, fairness key, result TTL) and lineage; the source stays failed.
func deadLettersReplayCopies(t *testing.T, b *bundle) {
	policy := &hoppertype.RetryPolicy{Base: time.Second, Multiplier: 3}
	src := b.jobIn(t, hoppertype.StateFailed, withKind("charge"), withPriority(7), withArgs(`{"card":42}`),
		withGroup("customer-9"), withFairness("tenant-9"), withMaxAttempts(4), withResultTTL(time.Hour), func(p *store.InsertParams) {
			p.Headers, p.Timeout, p.RetryPolicy = map[string]string{"trace": "abc"}, 30*time.Second, policy
		})
	b.clock.Advance(time.Minute)

	r := b.replay(t, src.ID, "alice")
	job := r.Job
	require.NotEqual(t, src.ID, job.ID)
	require.Equal(t, hoppertype.StateQueued, job.State)
	require.Equal(t, "charge", job.Kind)
	require.Equal(t, src.Queue, job.Queue)
	require.JSONEq(t, `{"card":42}`, string(job.Args))
	require.Equal(t, map[string]string{"trace": "abc"}, job.Headers)
	require.Equal(t, 7, job.Priority)
	require.Equal(t, 4, job.MaxAttempts)
	require.Zero(t, job.Attempt)
	require.Equal(t, 30*time.Second, job.Timeout)
	require.Equal(t, policy, job.RetryPolicy)
	require.Equal(t, "customer-9", job.GroupKey)
	require.Equal(t, "tenant-9", job.FairnessKey)
	require.Equal(t, time.Hour, job.ResultTTL)
	require.Equal(t, src.ID, job.OriginalID)
	require.Equal(t, 1, job.ReplayCount)
	require.Equal(t, "alice", job.ReplayedBy)
	require.Empty(t, job.LastError)
	sameTime(t, b.clock.Now(), job.CreatedAt, "created_at")
	require.Equal(t, job, b.get(t, job.ID), "the row as stored")

	require.Equal(t, src.ID, r.SourceJobID)
	require.Equal(t, job.ID, r.NewJobID)
	require.Equal(t, src.ID, r.OriginalID)
	require.Equal(t, "alice", r.ReplayedBy)
	sameTime(t, b.clock.Now(), r.ReplayedAt, "replayed_at")
	require.Positive(t, r.ID)

	after := b.get(t, src.ID)
	require.Equal(t, hoppertype.StateFailed, after.State)
	require.Equal(t, src.UpdatedAt, after.UpdatedAt, "the source is untouched")
	evs := b.events(t, job.ID)
	require.Len(t, evs, 1)
	require.Equal(t, hoppertype.StateQueued, evs[0].To)
	require.Equal(t, hoppertype.ActorOperator, evs[0].Actor)
	require.Equal(t, "replay", evs[0].Reason)
	require.Equal(t, job.ID, b.claimOne(t, src.Queue).ID, "the replay can be claimed")
}

// Replaying a replay keeps the first job as original and counts every replay; the audit log,
// listed by original, finds every replay of the lineage, each row naming the original.
func deadLettersReplayLineage(t *testing.T, b *bundle) {
	src := b.failedIn(t, "lineage")
	firstReplay := b.replay(t, src.ID, "alice")
	first := firstReplay.Job
	claimed := b.claimOne(t, "lineage")
	require.Equal(t, first.ID, claimed.ID)
	require.NoError(t, b.finish(t, finishing(claimed, hoppertype.StateFailed)))

	second := b.replay(t, first.ID, "bob")
	require.Equal(t, src.ID, second.Job.OriginalID)
	require.Equal(t, src.ID, second.OriginalID)
	require.Equal(t, 2, second.Job.ReplayCount)
	require.Equal(t, "bob", second.Job.ReplayedBy)

	again := b.replayAgain(t, src.ID, "carol")
	require.Equal(t, 1, again.Job.ReplayCount, "a job may be replayed more than once when forced")

	lineage := b.replayPages(t, store.ReplayListParams{OriginalID: src.ID})
	require.Equal(t, []int64{again.ID, second.ID, firstReplay.ID}, replayIDs(lineage))
	for _, r := range lineage {
		require.Equal(t, src.ID, r.OriginalID, "audit row %d", r.ID)
	}
	require.Equal(t, first.ID, lineage[1].SourceJobID, "the replay of a replay names its own source")
}

// Only failed jobs are replayed; unknown and expired ones are not found.
func deadLettersReplayOnlyFailed(t *testing.T, b *bundle) {
	dl := b.deadLetters(t)
	for _, state := range []hoppertype.JobState{hoppertype.StateQueued, hoppertype.StateScheduled,
		hoppertype.StateRunning, hoppertype.StateCompleted, hoppertype.StateCanceled} {
		job := b.jobIn(t, state)
		_, err := dl.JobReplay(t.Context(), &store.ReplayParams{SourceID: job.ID, NewID: newID(t), By: "x"})
		require.ErrorIs(t, err, store.ErrInvalidTransition, string(state))
	}
	_, err := dl.JobReplay(t.Context(), &store.ReplayParams{SourceID: newID(t), NewID: newID(t), By: "x"})
	require.ErrorIs(t, err, store.ErrNotFound)
	expired := b.expiring(t, hoppertype.StateFailed, time.Minute)
	b.clock.Advance(time.Minute)
	_, err = dl.JobReplay(t.Context(), &store.ReplayParams{SourceID: expired.ID, NewID: newID(t), By: "x"})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Len(t, b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateQueued}}), 1,
		"no replay was made: the one queued job is the setup's")
}

// ReplayMany replays the oldest failed jobs first, up to its limit, each once: a second call
// takes only what the first left, and jobs replayed one by one are skipped.
func deadLettersReplayMany(t *testing.T, b *bundle) {
	var failed []string
	for range 5 {
		failed = append(failed, b.failedIn(t, "bulk").ID)
		b.clock.Advance(time.Second)
	}
	b.jobIn(t, hoppertype.StateCompleted)
	b.replay(t, failed[1], "alice")

	rs := b.replayMany(t, store.ReplayManyParams{}, 2)
	require.Equal(t, []string{failed[0], failed[2]}, sources(rs))
	for _, r := range rs {
		require.Equal(t, "ops", r.ReplayedBy)
		require.Equal(t, "ops", r.Job.ReplayedBy)
		require.Equal(t, r.SourceJobID, r.Job.OriginalID)
		require.Equal(t, hoppertype.StateQueued, r.Job.State)
	}
	require.Less(t, rs[0].NewJobID, rs[1].NewJobID, "new jobs in source order")

	rs = b.replayMany(t, store.ReplayManyParams{}, 100)
	require.Equal(t, []string{failed[3], failed[4]}, sources(rs))
	require.Empty(t, b.replayMany(t, store.ReplayManyParams{}, 100), "nothing is replayed twice")
	for _, id := range failed {
		require.Equal(t, hoppertype.StateFailed, b.get(t, id).State)
	}
}

// ReplayMany's filter: queues, kinds and the failure time.
func deadLettersReplayManyFilters(t *testing.T, b *bundle) {
	ax := b.failedIn(t, "a", withKind("x"))
	b.clock.Advance(time.Hour)
	mid := b.clock.Now()
	ay := b.failedIn(t, "a", withKind("y"))
	bx := b.failedIn(t, "b", withKind("x"))

	require.Equal(t, []string{bx.ID}, sources(b.replayMany(t, store.ReplayManyParams{DeadLetterFilter: store.DeadLetterFilter{Queues: []string{"b"}}}, 10)))
	require.Equal(t, []string{ax.ID}, sources(b.replayMany(t, store.ReplayManyParams{DeadLetterFilter: store.DeadLetterFilter{FinishedBefore: mid}}, 10)))
	require.Empty(t, b.replayMany(t, store.ReplayManyParams{DeadLetterFilter: store.DeadLetterFilter{Kinds: []string{"x"}}}, 10))
	require.Equal(t, []string{ay.ID}, sources(b.replayMany(t, store.ReplayManyParams{
		DeadLetterFilter: store.DeadLetterFilter{Queues: []string{"a"}, Kinds: []string{"y"}, FinishedAfter: mid}}, 10)))
}

// Concurrent ReplayMany calls over the same dead letters replay each of them exactly once.
func deadLettersReplayManyConcurrent(t *testing.T, b *bundle) {
	const n = 40
	want := map[string]bool{}
	for range n {
		want[b.jobIn(t, hoppertype.StateFailed).ID] = true
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen := map[string]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := store.ReplayManyParams{By: "racer", Actor: hoppertype.ActorAPI}
			for range 15 {
				p.NewIDs = append(p.NewIDs, uuid.Must(uuid.NewV7()).String())
			}
			res, err := b.deadLetters(t).JobReplayMany(t.Context(), &p)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res.Replays {
				seen[r.SourceJobID]++
			}
		}()
	}
	wg.Wait()
	for id, count := range seen {
		require.True(t, want[id], "replayed a job that is not a dead letter: %s", id)
		require.Equal(t, 1, count, "job %s replayed %d times", id, count)
	}
	rest := b.replayMany(t, store.ReplayManyParams{}, 1000)
	require.Len(t, rest, n-len(seen), "what the racers left is replayed now, once")
}

// The audit log lists replays newest first, filtered and paged.
func deadLettersReplayList(t *testing.T, b *bundle) {
	dl := b.deadLetters(t)
	res, err := dl.ReplayList(t.Context(), &store.ReplayListParams{})
	require.NoError(t, err)
	require.Empty(t, res.Replays)

	src := b.jobIn(t, hoppertype.StateFailed)
	var made []*store.Replay
	for i, by := range []string{"alice", "bob", "alice"} {
		if i == 0 {
			made = append(made, b.replay(t, src.ID, by))
		} else {
			made = append(made, b.replayAgain(t, src.ID, by))
		}
		b.clock.Advance(time.Minute)
	}
	other := b.replay(t, b.jobIn(t, hoppertype.StateFailed).ID, "bob")

	all := b.replayPages(t, store.ReplayListParams{Limit: 2})
	require.Equal(t, []int64{other.ID, made[2].ID, made[1].ID, made[0].ID}, replayIDs(all))
	got := all[3]
	require.Equal(t, src.ID, got.SourceJobID)
	require.Equal(t, made[0].NewJobID, got.NewJobID)
	require.Equal(t, src.ID, got.OriginalID)
	require.Equal(t, "alice", got.ReplayedBy)
	require.Equal(t, "replay", got.Reason)
	sameTime(t, made[0].ReplayedAt, got.ReplayedAt, "replayed_at")
	require.Nil(t, got.Job, "listings carry no job")

	byAlice := b.replayPages(t, store.ReplayListParams{ReplayedBy: "alice"})
	require.Equal(t, []int64{made[2].ID, made[0].ID}, replayIDs(byAlice))
	ofSrc := b.replayPages(t, store.ReplayListParams{SourceJobID: src.ID, Since: made[1].ReplayedAt})
	require.Equal(t, []int64{made[2].ID, made[1].ID}, replayIDs(ofSrc))
	lineage := b.replayPages(t, store.ReplayListParams{OriginalID: other.OriginalID})
	require.Equal(t, []int64{other.ID}, replayIDs(lineage))
	early := b.replayPages(t, store.ReplayListParams{Until: made[1].ReplayedAt})
	require.Equal(t, []int64{made[0].ID}, replayIDs(early))

	_, err = dl.ReplayList(t.Context(), &store.ReplayListParams{Cursor: store.EncodeCursor(src.ID)})
	require.ErrorIs(t, err, store.ErrInvalidCursor, "a job list cursor is not a replay cursor")
}

func (b *bundle) replayPages(t *testing.T, p store.ReplayListParams) []*store.Replay {
	t.Helper()
	var out []*store.Replay
	for {
		res, err := b.deadLetters(t).ReplayList(t.Context(), &p)
		require.NoError(t, err)
		out = append(out, res.Replays...)
		if res.NextCursor == "" {
			return out
		}
		p.Cursor = res.NextCursor
	}
}

func replayIDs(rs []*store.Replay) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// A replayed dead letter has been dealt with: it stays listed (its audit trail) but no longer
// counts, so alerts on the count and the oldest age clear once everything is replayed.
func deadLettersStatsLeaveOutReplayed(t *testing.T, b *bundle) {
	old := b.jobIn(t, hoppertype.StateFailed)
	b.clock.Advance(time.Minute)
	young := b.jobIn(t, hoppertype.StateFailed)
	b.replay(t, old.ID, "ops")
	st, err := b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Count)
	sameTime(t, b.get(t, young.ID).FinishedAt, st.Oldest, "oldest unreplayed")
	b.replay(t, young.ID, "ops")
	st, err = b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Count)
}

// The counts and the listing agree: Count is the number of failed jobs the listing without
// the replayed ones holds, Count + Replayed the number the whole listing holds; and exactly
// the replayed ones are marked, with how often and by which newest job. Expired dead letters,
// replayed or not, are in neither.
func deadLettersCountsAgreeWithTheListing(t *testing.T, b *bundle) {
	once := b.jobIn(t, hoppertype.StateFailed, withKind("a"))
	twice := b.jobIn(t, hoppertype.StateFailed, withKind("b"))
	pending := b.jobIn(t, hoppertype.StateFailed, withKind("c"))
	gone := b.expiring(t, hoppertype.StateFailed, time.Minute)
	b.jobIn(t, hoppertype.StateCompleted)
	b.jobIn(t, hoppertype.StateCanceled)
	b.replay(t, once.ID, "ops")
	b.replay(t, twice.ID, "ops")
	b.clock.Advance(time.Second)
	last := b.replayAgain(t, twice.ID, "alice")
	b.replay(t, gone.ID, "ops")
	b.clock.Advance(time.Minute) // gone expires, replayed

	failed := store.ListParams{States: []hoppertype.JobState{hoppertype.StateFailed}, Limit: 2}
	all := b.listAll(t, failed)
	failed.ExcludeReplayed = true
	unreplayed := b.listAll(t, failed)
	st, err := b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{pending.ID}, ids(unreplayed), "the listing without the replayed")
	require.Equal(t, []string{pending.ID, twice.ID, once.ID}, ids(all), "the whole listing, newest first")
	require.Equal(t, int64(len(unreplayed)), st.Count, "Count is what the listing without the replayed holds")
	require.Equal(t, int64(len(all)), st.Count+st.Replayed, "Count + Replayed is what the whole listing holds")
	sameTime(t, pending.FinishedAt, st.Oldest, "oldest unreplayed")

	marks, err := b.deadLetters(t).ReplaySummaries(t.Context(), append(ids(all), "no-such-job"))
	require.NoError(t, err)
	require.Len(t, marks, int(st.Replayed), "exactly the replayed ones are marked")
	require.Equal(t, 1, marks[once.ID].Count)
	require.Equal(t, 2, marks[twice.ID].Count)
	require.Equal(t, last.NewJobID, marks[twice.ID].LastJobID, "the newest replay")
	sameTime(t, last.ReplayedAt, marks[twice.ID].LastAt, "newest replay's time")
	require.NotContains(t, marks, pending.ID)

	none, err := b.deadLetters(t).ReplaySummaries(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, none)
}
