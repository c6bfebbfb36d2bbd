package hopper

import (
	"context"
	"errors"
	"fmt"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// enqueueIn enqueues n jobs in queue.
func enqueueIn(t *testing.T, b *testBundle, queue string, n int) {
	t.Helper()
	items := make([]EnqueueParams, n)
	for i := range items {
		items[i] = EnqueueParams{Args: sendEmail{To: fmt.Sprint(i)}, Opts: &InsertOpts{Queue: queue}}
	}
	_, err := b.client.EnqueueMany(t.Context(), items)
	require.NoError(t, err)
}

func countByQueue(jobs []*JobRow) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		out[j.Queue]++
	}
	return out
}

// Contract 14 for remote workers: one Activate over several queues shares its jobs by the
// stored weights, counting what the worker holds.
func TestActivateSharesItsJobsBetweenQueuesByWeight(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	require.NoError(t, b.client.SetQueueWeight(t.Context(), "reports", 3))
	enqueueIn(t, b, "reports", 200)
	enqueueIn(t, b, "emails", 200)
	p := workerapi.ActivateParams{Queue: "reports", Queues: []string{"emails", "reports"}, MaxJobs: 20}
	require.Equal(t, map[string]int{"reports": 15, "emails": 5}, countByQueue(activate(t, b, p)))

	p.Held = map[string]int{"reports": 60}
	require.Equal(t, map[string]int{"emails": 20}, countByQueue(activate(t, b, p)),
		"the worker holds 60 of reports already: 60 and 20 is 3:1 of 80")
}

// A queue with fewer ready jobs than its part gives the rest to the others in the same call,
// and is named as drained.
func TestActivateIsWorkConservingAcrossQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	require.NoError(t, b.client.SetQueueWeight(t.Context(), "reports", 3))
	enqueueIn(t, b, "reports", 200)
	enqueueIn(t, b, "emails", 3)
	got, err := b.client.workerAPI.ActivateQueues(t.Context(),
		workerapi.ActivateParams{Worker: "w", Queues: []string{"reports", "emails"}, MaxJobs: 20})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"reports": 17, "emails": 3}, countByQueue(got.Jobs))
	require.Equal(t, []string{"emails"}, got.Drained)

	got, err = b.client.workerAPI.ActivateQueues(t.Context(),
		workerapi.ActivateParams{Worker: "w", Queues: []string{"reports", "emails", "idle"}, MaxJobs: 1000})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"reports": 183}, countByQueue(got.Jobs), "every ready job, whatever the split")
	require.Equal(t, []string{"reports", "emails", "idle"}, got.Drained)
	require.Zero(t, got.Retry, "no rate limit held a claim")
}

// Polls of one job, with no memory of each other, still follow the weights: the odd job goes
// to a queue drawn by its fraction.
func TestOneJobPollsFollowTheWeights(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	require.NoError(t, b.client.SetQueueWeight(t.Context(), "reports", 3))
	enqueueIn(t, b, "reports", 400)
	enqueueIn(t, b, "emails", 400)
	got := map[string]int{}
	for range 400 {
		for q, n := range countByQueue(activate(t, b, workerapi.ActivateParams{Queues: []string{"reports", "emails"}})) {
			got[q] += n
		}
	}
	require.InDelta(t, 300, got["reports"], 30, "3:1 of 400 within 10%% (%v)", got)
	require.Equal(t, 400, got["reports"]+got["emails"])
}

// A wait over several queues ends at a wake-up of any of them.
func TestActivateWaitWakesOnAnyOfItsQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil) // a fake clock that never moves: only a wake-up ends the wait
	got := make(chan []*JobRow, 1)
	go func() {
		jobs, err := b.client.workerAPI.Activate(t.Context(), workerapi.ActivateParams{Worker: "w",
			Queues: []string{"reports", "emails"}, Wait: time.Minute})
		if err != nil {
			jobs = nil
		}
		got <- jobs
	}()
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "emails"})
	require.NoError(t, err)
	jobs := recv(t, got)
	require.Len(t, jobs, 1)
	require.Equal(t, res.Job.ID, jobs[0].ID)
}

func TestActivateRefusesBadQueuesNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	many := make([]string, workerapi.MaxActivateQueues+1)
	for i := range many {
		many[i] = fmt.Sprintf("q%d", i)
	}
	for _, tc := range []struct {
		p     workerapi.ActivateParams
		field string
	}{
		{workerapi.ActivateParams{Queues: many}, "queues"},
		{workerapi.ActivateParams{Queue: "extra", Queues: many[:workerapi.MaxActivateQueues]}, "queues"},
		{workerapi.ActivateParams{Queues: []string{"a", ""}}, "queues[1]"},
		{workerapi.ActivateParams{Queues: []string{"bad queue"}}, "queues[0]"},
		{workerapi.ActivateParams{Queue: "bad queue", Queues: []string{"a"}}, "queue"},
	} {
		tc.p.Worker = "w"
		_, err := b.client.workerAPI.Activate(t.Context(), tc.p)
		var ve *ValidationError
		require.True(t, errors.As(err, &ve), "%v", err)
		require.Equal(t, tc.field, ve.Field)
	}
	require.Equal(t, []string{"a", "b"}, workerapi.ActivateParams{Queue: "a", Queues: []string{"b", "a", "b"}}.QueueNames(),
		"merged, each once")
	require.Equal(t, []string{DefaultQueue}, workerapi.ActivateParams{}.QueueNames())
	_, err := b.client.workerAPI.Activate(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: "a",
		Queues: append([]string{"a"}, many[:workerapi.MaxActivateQueues-1]...)})
	require.NoError(t, err, "a queue named twice counts once")
}

// A long poll held back by a rate limit looks again when the limit's next start is due, not
// at its next once-a-second look: at 5/1s the next job comes 200 ms (of fake time) later.
func TestActivateWaitsForARateLimitsNextStart(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Queue: "reports", Rate: Rate{Limit: 5, Period: time.Second}}))
	enqueueIn(t, b, "reports", 10)
	api := b.client.workerAPI
	got, err := api.ActivateQueues(ctx, workerapi.ActivateParams{Worker: "w", Queue: "reports", MaxJobs: 10})
	require.NoError(t, err)
	require.Len(t, got.Jobs, 5, "the full bucket")
	require.Equal(t, []string{"reports"}, got.Drained)
	require.Equal(t, 200*time.Millisecond, got.Retry)

	start := b.clock.Now()
	done := make(chan []*JobRow, 1)
	go func() {
		jobs, err := api.Activate(context.Background(), workerapi.ActivateParams{Worker: "w", Queue: "reports", MaxJobs: 10, Wait: 30 * time.Second})
		assert.NoError(t, err)
		done <- jobs
	}()
	var jobs []*JobRow
	require.Eventually(t, func() bool {
		select {
		case jobs = <-done:
			return true
		default:
			b.clock.Advance(10 * time.Millisecond)
			return false
		}
	}, 10*time.Second, time.Millisecond)
	require.Len(t, jobs, 1)
	require.Less(t, b.clock.Now().Sub(start), time.Second, "woken for the next start, not by the once-a-second look")
}

// Ahead (a stream's server claiming beyond its worker's credit) is taken when nothing
// restricts the queue, and left when a cap applies, which the result says; it needs a single
// queue and must leave at least one job for the worker's credit.
func TestActivateAhead(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	enqueueIn(t, b, "solo", 20)
	got, err := b.client.workerAPI.ActivateQueues(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: "solo", MaxJobs: 5, Ahead: 3})
	require.NoError(t, err)
	require.Len(t, got.Jobs, 5)
	require.False(t, got.Restricted)

	require.NoError(t, b.client.SetLimit(t.Context(), Limit{Queue: "solo", MaxRunning: 100}))
	got, err = b.client.workerAPI.ActivateQueues(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: "solo", MaxJobs: 5, Ahead: 3})
	require.NoError(t, err)
	require.Len(t, got.Jobs, 2, "a cap applies: none ahead, in no later round either")
	require.True(t, got.Restricted)
	require.Empty(t, got.Drained, "it got all it could ask for: not drained")

	for _, p := range []workerapi.ActivateParams{
		{Queue: "solo", MaxJobs: 5, Ahead: 5},
		{Queue: "solo", MaxJobs: 5, Ahead: -1},
		{Queues: []string{"a", "b"}, MaxJobs: 5, Ahead: 1},
	} {
		p.Worker = "w"
		_, err := b.client.workerAPI.Activate(t.Context(), p)
		var ve *ValidationError
		require.True(t, errors.As(err, &ve), "%v", err)
		require.Equal(t, "ahead", ve.Field)
	}
}
