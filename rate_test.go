package hopper

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"

	"github.com/stretchr/testify/require"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]Rate{
		"100/1s":      {Limit: 100, Period: time.Second},
		"5000/1h":     {Limit: 5000, Period: time.Hour},
		"10/m":        {Limit: 10, Period: time.Minute},
		" 7 / 250ms ": {Limit: 7, Period: 250 * time.Millisecond},
		"1/720h":      {Limit: 1, Period: 720 * time.Hour},
		"0":           {},
	} {
		got, err := ParseRate("rate", text)
		require.NoError(t, err, text)
		require.Equal(t, want, got, text)
		if !got.IsZero() {
			again, err := ParseRate("rate", got.String())
			require.NoError(t, err)
			require.Equal(t, got, again, "String writes what ParseRate reads")
		}
	}
	for _, text := range []string{"", "abc", "0/1s", "-1/1s", "1.5/1s", "10", "10/", "10/abc", "1/0s", "1/-1s",
		"1/999us", "1/721h", "2147483648/1s", "99999999999999999999/1s", "1/1s/1s", "0/0", "0/0s", "1/1.000001ms", "1/1500ns"} {
		_, err := ParseRate("--rate", text)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%q", text)
		require.Equal(t, "--rate", ve.Field, "%q", text)
		require.ErrorIs(t, err, ErrInvalid)
	}
}

func TestSetRateLimitRefusesBadValuesNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	for want, l := range map[string]RateLimit{
		"rate_limit": {Rate: Rate{Limit: 1, Period: time.Second}},
		"rate":       {Queue: "default", Rate: Rate{Limit: 0, Period: time.Second}},
		"queue":      {Queue: "no spaces", Rate: Rate{Limit: 1, Period: time.Second}},
		"kind":       {Kind: "a\tb", Rate: Rate{Limit: 1, Period: time.Second}},
	} {
		err := b.client.SetRateLimit(ctx, l)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, want)
		require.Equal(t, want, ve.Field)
	}
	require.Error(t, b.client.SetRateLimit(ctx, RateLimit{Queue: "a", Kind: "b", Rate: Rate{Limit: 1, Period: time.Second}}))
	ls, err := b.client.RateLimits(ctx)
	require.NoError(t, err)
	require.Empty(t, ls, "nothing refused was stored")

	_, err = NewClient(Config{Store: b.store, RateLimits: []RateLimit{{Queue: "default", Rate: Rate{Limit: 1}}}})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "Config.RateLimits[0].rate", ve.Field)
	_, err = NewClient(Config{Store: b.store, Limits: []Limit{{Queue: "default", Kind: "pdf", MaxRunning: 1}}})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "Config.Limits[0].limit", ve.Field)
}

// Config.Limits and Config.RateLimits are stored by Start, for the whole fleet.
func TestDeclaredLimitsAreStoredAtStart(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) {
		c.Limits = []Limit{{Queue: "emails", MaxRunning: 20}}
		c.RateLimits = []RateLimit{{Queue: "emails", Rate: Rate{Limit: 100, Period: time.Second}},
			{Kind: "pdf", Rate: Rate{Limit: 5000, Period: time.Hour}}}
	})
	ctx := t.Context()
	ls, err := b.client.RateLimits(ctx)
	require.NoError(t, err)
	require.Equal(t, []RateLimit{{Queue: "emails", Rate: Rate{Limit: 100, Period: time.Second}},
		{Kind: "pdf", Rate: Rate{Limit: 5000, Period: time.Hour}}}, ls)
	caps, err := b.client.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, []Limit{{Queue: "emails", MaxRunning: 20}}, caps)
	qs, err := b.client.Queues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, Rate{Limit: 100, Period: time.Second}, qs[0].Rate)
	require.Equal(t, 20, qs[0].MaxRunning)
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*KindInfo{{Name: "pdf", Rate: Rate{Limit: 5000, Period: time.Hour}, Counts: map[JobState]int64{}}}, ks)
}

// startTimes records when (on a fake clock) each job a handler runs was claimed.
type startTimes struct {
	mu    sync.Mutex
	clock *clock.Fake
	at    []time.Duration // since the clock's start, in claim order
}

func (s *startTimes) record(job *JobRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, job.StartedAt.Sub(testStart))
	slices.Sort(s.at)
}

func (s *startTimes) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

// stepUntil moves the fake clock on by step between looks until n jobs have started; so the
// test does not depend on when the producer sets its timers.
func (s *startTimes) stepUntil(t *testing.T, n int, step time.Duration) []time.Duration {
	t.Helper()
	require.Eventually(t, func() bool {
		if len(s.get()) >= n {
			return true
		}
		s.clock.Advance(step)
		return false
	}, 20*time.Second, 2*time.Millisecond, "%d starts", n)
	return s.get()
}

// A queue's rate limit lets a full bucket start at once, then one start per 1/rate of (fake)
// time, whatever the backlog; the producer wakes for the next starts with nothing else to wake
// it (the poll interval is an hour). How soon after they are allowed the starts come depends
// on how fast the test moves the clock, so only the earliest times are checked.
func TestQueueRateLimitPacesStarts(t *testing.T) {
	t.Parallel()
	starts := &startTimes{}
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		starts.record(job.JobRow)
		return nil
	})
	b := setup(t, ws, nil)
	starts.clock = b.clock
	ctx := t.Context()
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Queue: DefaultQueue, Rate: Rate{Limit: 5, Period: time.Second}}))
	for range 30 {
		_, err := b.client.Enqueue(ctx, sendEmail{}, nil)
		require.NoError(t, err)
	}
	at := starts.stepUntil(t, 30, 10*time.Millisecond)
	require.Len(t, at, 30)
	for i, d := range at {
		// The i-th start (from 0) needs i+1 tokens: 5 at once, then one per 200 ms.
		earliest := time.Duration(max(i+1-5, 0)) * 200 * time.Millisecond
		require.GreaterOrEqual(t, d, earliest, "start %d came before the limit allowed it", i)
	}
}

// A kind's rate limit holds back only that kind: other kinds of the queue start at once.
func TestKindRateLimitHoldsOnlyItsKind(t *testing.T) {
	t.Parallel()
	pdfs := &startTimes{}
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[pdfArgs]) error {
		pdfs.record(job.JobRow)
		return nil
	})
	b := setup(t, ws, nil)
	pdfs.clock = b.clock
	ctx := t.Context()
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Kind: "pdf", Rate: Rate{Limit: 1, Period: time.Minute}}))
	for range 3 {
		_, err := b.client.Enqueue(ctx, pdfArgs{}, nil)
		require.NoError(t, err)
	}
	var emails []string
	for range 3 {
		res, err := b.client.Enqueue(ctx, sendEmail{}, nil)
		require.NoError(t, err)
		emails = append(emails, res.Job.ID)
	}
	for _, id := range emails {
		job := b.waitFor(t, id, StateCompleted)
		require.Equal(t, testStart, job.StartedAt, "other kinds start at once")
	}
	at := pdfs.stepUntil(t, 3, time.Second)
	require.Zero(t, at[0])
	require.GreaterOrEqual(t, at[1], time.Minute)
	require.GreaterOrEqual(t, at[2]-at[1], time.Minute)
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, Rate{Limit: 1, Period: time.Minute}, ks[0].Rate)
}

// A producer held back by a rate limit looks again within a second, however far off the
// limit's next start: a queue limited to one start an hour whose limit is then raised to 100
// a second starts its next job about a second later, not an hour.
func TestRaisedRateLimitAppliesWithinASecond(t *testing.T) {
	t.Parallel()
	starts := &startTimes{}
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		starts.record(job.JobRow)
		return nil
	})
	b := setup(t, ws, nil)
	starts.clock = b.clock
	ctx := t.Context()
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Queue: DefaultQueue, Rate: Rate{Limit: 1, Period: time.Hour}}))
	_, err := b.client.EnqueueMany(ctx, []EnqueueParams{{Args: sendEmail{}}, {Args: sendEmail{}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(starts.get()) == 1 }, 10*time.Second, time.Millisecond)

	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Queue: DefaultQueue, Rate: Rate{Limit: 100, Period: time.Second}}))
	require.Eventually(t, func() bool { // a minute at most, in steps of 100 ms
		if len(starts.get()) == 2 || b.clock.Now().Sub(testStart) >= time.Minute {
			return true
		}
		b.clock.Advance(100 * time.Millisecond)
		return false
	}, 20*time.Second, 2*time.Millisecond)
	at := starts.get()
	require.Len(t, at, 2, "the second job had not started a minute after the limit was raised")
	// About a second (the ceiling on a rate limit's wait); the slack is for the steps the
	// clock takes while the claim runs.
	require.LessOrEqual(t, at[1], 10*time.Second, "the second job started %s after the limit was raised", at[1])
}
