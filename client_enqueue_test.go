package hopper

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

func TestEnqueueRejectsBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	good, err := b.client.Enqueue(ctx, sendEmail{To: "kept"}, nil)
	require.NoError(t, err)

	cases := []struct {
		name  string
		args  JobArgs
		opts  *InsertOpts
		field string
	}{
		{"empty kind", RawArgs{KindName: "", JSON: []byte(`{}`)}, nil, "kind"},
		{"kind with space", RawArgs{KindName: "send email", JSON: []byte(`{}`)}, nil, "kind"},
		{"invalid JSON", RawArgs{KindName: "k", JSON: []byte(`{"a":`)}, nil, "args"},
		{"nil args", nil, nil, "args"},
		{"negative max attempts", sendEmail{}, &InsertOpts{MaxAttempts: -1}, "max_attempts"},
		{"too many attempts", sendEmail{}, &InsertOpts{MaxAttempts: 1001}, "max_attempts"},
		{"run_at far in the past", sendEmail{}, &InsertOpts{RunAt: testStart.Add(-48 * time.Hour)}, "run_at"},
		{"run_at far in the future", sendEmail{}, &InsertOpts{RunAt: testStart.AddDate(6, 0, 0)}, "run_at"},
		{"run_at and delay", sendEmail{}, &InsertOpts{RunAt: testStart.Add(time.Hour), Delay: time.Hour}, "run_at"},
		{"negative delay", sendEmail{}, &InsertOpts{Delay: -time.Second}, "delay"},
		{"priority out of range", sendEmail{}, &InsertOpts{Priority: 5000}, "priority"},
		{"bad queue name", sendEmail{}, &InsertOpts{Queue: "no spaces"}, "queue"},
		{"negative timeout", sendEmail{}, &InsertOpts{Timeout: -time.Second}, "timeout"},
		{"empty header name", sendEmail{}, &InsertOpts{Headers: map[string]string{"": "x"}}, "headers"},
		{"bad jitter", sendEmail{}, &InsertOpts{RetryPolicy: &RetryPolicy{Jitter: 2}}, "retry_policy"},
		{"bad multiplier", sendEmail{}, &InsertOpts{RetryPolicy: &RetryPolicy{Multiplier: 0.5}}, "retry_policy"},
		{"args too large", RawArgs{KindName: "k", JSON: json.RawMessage(`"` + strings.Repeat("x", MaxArgsBytes) + `"`)}, nil, "args"},
	}
	for _, tc := range cases {
		_, err := b.client.Enqueue(ctx, tc.args, tc.opts)
		require.ErrorIs(t, err, ErrInvalid, tc.name)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.field, ve.Field, tc.name)
		require.NotEmpty(t, ve.Reason, tc.name)
	}
	// A batch with one bad job stores none of it.
	_, err = b.client.EnqueueMany(ctx, []EnqueueParams{{Args: sendEmail{To: "a"}}, {Args: sendEmail{}, Opts: &InsertOpts{MaxAttempts: -3}}})
	require.ErrorIs(t, err, ErrInvalid)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "jobs[1].max_attempts", ve.Field, "the field of the entry")

	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Jobs, 1, "nothing but the good job was stored")
	require.Equal(t, good.Job.ID, all.Jobs[0].ID)
	require.JSONEq(t, `{"to":"kept"}`, string(all.Jobs[0].Args))
}

func TestEnqueueOptionsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, &InsertOpts{
		Queue: "mail", Priority: 7, Delay: time.Minute, MaxAttempts: 4, Timeout: 9 * time.Second,
		Headers: map[string]string{"traceparent": "00-abc"}, IdempotencyKey: "k1",
	})
	require.NoError(t, err)
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateScheduled, job.State)
	require.Equal(t, "mail", job.Queue)
	require.Equal(t, 7, job.Priority)
	require.Equal(t, testStart.Add(time.Minute), job.RunAt)
	require.Equal(t, 4, job.MaxAttempts)
	require.Equal(t, 9*time.Second, job.Timeout)
	require.Equal(t, "00-abc", job.Headers["traceparent"])

	again, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, &InsertOpts{IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, job.ID, again.Job.ID)
	_, err = b.client.Enqueue(t.Context(), sendEmail{To: "b"}, &InsertOpts{IdempotencyKey: "k1"})
	require.ErrorIs(t, err, ErrDuplicate)
}

// RawArgs are stored as they came, insignificant white space aside: json.Marshal would also
// escape <, > and & (as \u003c…), so args sent through the async endpoints or the RPC API
// came back other than sent. Found by FuzzAsync (internal/server).
func TestRawArgsAreStoredAsSent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	sent := ` { "html" : "<b>&amp;</b>", "ls": "\u2028  ", "n": [1, 2.50] } `
	res, err := b.client.Enqueue(t.Context(), RawArgs{KindName: "k", JSON: json.RawMessage(sent)}, nil)
	require.NoError(t, err)
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, `{"html":"<b>&amp;</b>","ls":"\u2028  ","n":[1,2.50]}`, string(job.Args))

	again, err := b.client.Enqueue(t.Context(), RawArgs{KindName: "k", JSON: json.RawMessage(sent)}, &InsertOpts{IdempotencyKey: "a"})
	require.NoError(t, err)
	same, err := b.client.Enqueue(t.Context(), RawArgs{KindName: "k", JSON: json.RawMessage(strings.TrimSpace(sent))},
		&InsertOpts{IdempotencyKey: "a"})
	require.NoError(t, err)
	require.True(t, same.Existing, "white space does not make another payload")
	require.Equal(t, again.Job.ID, same.Job.ID)
}

type mailArgs struct{}

func (mailArgs) Kind() string { return "mail" }
func (mailArgs) InsertOpts() InsertOpts {
	return InsertOpts{Queue: "mail", MaxAttempts: 3, Priority: 2}
}

func TestArgsInsertOptsAreDefaultsForTheKind(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	res, err := b.client.Enqueue(t.Context(), mailArgs{}, &InsertOpts{Priority: 9})
	require.NoError(t, err)
	require.Equal(t, "mail", res.Job.Queue)
	require.Equal(t, 3, res.Job.MaxAttempts)
	require.Equal(t, 9, res.Job.Priority, "explicit options win")
}

func TestConcurrencyLimits(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var running, peak atomic.Int32
	release := make(chan struct{})
	var startedOnce sync.Once
	allIn := make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			startedOnce.Do(func() { close(allIn) })
		}
		<-release
		running.Add(-1)
		return nil
	})
	b := setup(t, ws, func(c *Config) {
		c.MaxWorkers = 5
		c.Queues = map[string]QueueConfig{"default": {MaxWorkers: 3}, "other": {}}
	})
	batch := make([]EnqueueParams, 20)
	for i := range batch {
		batch[i] = EnqueueParams{Args: sendEmail{}}
	}
	res, err := b.client.EnqueueMany(t.Context(), batch)
	require.NoError(t, err)
	recv(t, allIn)
	require.Equal(t, 3, b.client.Running(), "queue limit 3 holds while jobs wait")
	close(release)
	for _, r := range res {
		b.waitFor(t, r.Job.ID, StateCompleted)
	}
	require.Equal(t, int32(3), peak.Load())
}

// With the process limit equal to the queue limit, a claim can get fewer slots than the queue
// has free; that must not park the producer until the (here, hour-long) poll interval.
func TestProducerKeepsClaimingWhenSlotsAreTight(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	b := setup(t, ws, func(c *Config) { c.MaxWorkers = 2 })
	batch := make([]EnqueueParams, 300)
	for i := range batch {
		batch[i] = EnqueueParams{Args: sendEmail{}}
	}
	res, err := b.client.EnqueueMany(t.Context(), batch)
	require.NoError(t, err)
	for _, r := range slices.Backward(res) { // the last to run first: one wait, then checks
		b.waitFor(t, r.Job.ID, StateCompleted)
	}
}

func TestConfigRejectsNegativeDurations(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer st.Close()
	for _, mutate := range []func(*Config){
		func(c *Config) { c.PollInterval = -time.Second },
		func(c *Config) { c.NodeTTL = -time.Second },
		func(c *Config) { c.LeaderTTL = -time.Second },
		func(c *Config) { c.RescueInterval = -1 },
		func(c *Config) { c.MaxWorkers = -1 },
	} {
		cfg := Config{Store: st}
		mutate(&cfg)
		_, err := NewClient(cfg)
		require.ErrorIs(t, err, ErrInvalid)
	}
}

// ClaimAhead takes NoClaimAhead, the default or a bound within one claim; above it or below
// NoClaimAhead, the error names the field.
func TestConfigClaimAhead(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer st.Close()
	for _, n := range []int{NoClaimAhead, 0, 1, MaxClaimAhead} {
		c, err := NewClient(Config{Store: st, ClaimAhead: n})
		require.NoError(t, err, n)
		require.NoError(t, c.Stop(t.Context()))
	}
	for _, n := range []int{MaxClaimAhead + 1, NoClaimAhead - 1} {
		_, err = NewClient(Config{Store: st, ClaimAhead: n})
		require.ErrorIs(t, err, ErrInvalid, n)
		require.ErrorContains(t, err, "Config.ClaimAhead", n)
	}
}
