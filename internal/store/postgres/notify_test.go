package postgres_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// subscription is a running Subscribe whose notifications arrive on notes.
type subscription struct {
	notes chan store.Notification
	done  chan error
}

// subscribe starts Subscribe and returns once its LISTEN is in place. The subscription ends
// at cleanup (or when the test ends it).
func subscribe(t *testing.T, s *postgres.Store) (*subscription, context.CancelFunc) {
	t.Helper()
	ready := make(chan struct{})
	postgres.OnListening(s, func() { close(ready) })
	sub := &subscription{notes: make(chan store.Notification, 1000), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { sub.done <- s.Subscribe(ctx, func(n store.Notification) { sub.notes <- n }) }()
	t.Cleanup(func() {
		cancel()
		<-sub.done
	})
	select {
	case <-ready:
	case err := <-sub.done:
		t.Fatalf("subscribe: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("subscription not listening after 10 s")
	}
	// The first notification says the subscription listens (so its subscriber can look for
	// what it may have missed); the tests read the pushed events after it.
	require.Equal(t, store.Notification{Kind: store.Subscribed}, sub.next(t))
	return sub, cancel
}

// next returns the next notification, failing the test after a second without one.
func (sub *subscription) next(t *testing.T) store.Notification {
	t.Helper()
	select {
	case n := <-sub.notes:
		return n
	case err := <-sub.done:
		t.Fatalf("subscription ended: %v", err)
	case <-time.After(time.Second):
		t.Fatal("no notification within a second")
	}
	return store.Notification{}
}

func insertParams(queue string, n int) []*store.InsertParams {
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: newID(), Kind: "noop", Queue: queue, Args: []byte(`{}`),
			MaxAttempts: 3, Actor: hoppertype.ActorAPI, Reason: "enqueue"}
	}
	return ps
}

// A committed insert reaches a subscriber within a second; a rolled-back one sends nothing.
// Notifications arrive in commit order, so the first one after both is the committed one's.
func TestNotifyInsertCommittedNotRolledBack(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	sub, _ := subscribe(t, s)

	tx, err := connect(t).Begin(t.Context())
	require.NoError(t, err)
	_, err = s.Tx(tx).JobInsertMany(t.Context(), insertParams("rolled-back", 1))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(t.Context()))

	start := time.Now()
	_, err = s.JobInsertMany(t.Context(), insertParams("committed", 1))
	require.NoError(t, err)
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "committed"}, sub.next(t))
	t.Logf("notified %v after the insert returned", time.Since(start))
}

// One transaction that makes many jobs claimable in two queues sends one notification per
// queue, however many jobs and statements it has.
func TestNotifyOncePerQueuePerTransaction(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	sub, _ := subscribe(t, s)

	tx, err := connect(t).Begin(t.Context())
	require.NoError(t, err)
	for range 3 {
		_, err = s.Tx(tx).JobInsertMany(t.Context(), append(insertParams("a", 100), insertParams("b", 100)...))
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(t.Context()))
	_, err = s.JobInsertMany(t.Context(), insertParams("sentinel", 1))
	require.NoError(t, err)

	var queues []string
	for n := sub.next(t); n.Queue != "sentinel"; n = sub.next(t) {
		queues = append(queues, n.Queue)
	}
	require.ElementsMatch(t, []string{"a", "b"}, queues)
}

// Promotion, rescue and a resumed queue make jobs claimable: each wakes subscribers. A
// canceled running job is pushed with its id. (The database clock, no fake one.)
func TestNotifyPromoteRescueResumeCancel(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	ctx := t.Context()
	scheduled := insertParams("promoted", 1)
	scheduled[0].RunAt = s.Now().Add(300 * time.Millisecond)
	res, err := s.JobInsertMany(ctx, append(scheduled, insertParams("held", 2)...))
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateScheduled, res[0].Job.State)
	jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "held", Limit: 2, WorkerID: "w", LeaseDuration: time.Millisecond})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	sub, _ := subscribe(t, s)

	var rescued []string
	require.Eventually(t, func() bool {
		r, err := s.JobRescueExpired(ctx, &store.RescueParams{Limit: 1})
		require.NoError(t, err)
		rescued = r.JobIDs
		return len(rescued) == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "held"}, sub.next(t))

	require.Eventually(t, func() bool {
		r, err := s.JobPromoteScheduled(ctx, &store.PromoteParams{})
		require.NoError(t, err)
		return r.Promoted == 1
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "promoted"}, sub.next(t))

	require.NoError(t, s.QueueSetPaused(ctx, "paused", true))
	require.NoError(t, s.QueueSetPaused(ctx, "paused", false))
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "paused"}, sub.next(t))

	running := jobs[0].ID
	if running == rescued[0] {
		running = jobs[1].ID
	}
	_, err = s.JobCancel(ctx, &store.CancelParams{ID: running, Actor: hoppertype.ActorAPI, Reason: "test"})
	require.NoError(t, err)
	require.Equal(t, store.Notification{Kind: store.JobCanceled, JobID: running}, sub.next(t))
}

// Enabling a disabled kind wakes the workers of every queue (a JobsAvailable without a
// queue): its jobs may be anywhere. Disabling, or enabling a kind that is not disabled, sends
// nothing: the next notification is the resumed queue's.
func TestNotifyEnabledKind(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	ctx := t.Context()
	sub, _ := subscribe(t, s)
	require.NoError(t, s.KindSetDisabled(ctx, "pdf", true))
	require.NoError(t, s.KindSetDisabled(ctx, "pdf", false))
	require.Equal(t, store.Notification{Kind: store.JobsAvailable}, sub.next(t))

	require.NoError(t, s.KindSetDisabled(ctx, "pdf", false))
	require.NoError(t, s.KindSetDisabled(ctx, "mail", false))
	require.NoError(t, s.QueueSetPaused(ctx, "q", false))
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "q"}, sub.next(t))
}

// Removing a cap or rate limit wakes the workers of its queue, or of every queue for a kind's:
// the jobs it held back are claimable, and a claim that read the limit, then its absence,
// took the queue for empty and left a claim cursor past them. Setting one, or removing one that
// is not set, sends nothing: the next notification is the resumed queue's.
func TestNotifyClearedLimits(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	ctx := t.Context()
	sub, _ := subscribe(t, s)
	perMinute := store.Rate{Limit: 5, Period: time.Minute}
	for name, c := range map[string]struct {
		set, clear func() error
		want       store.Notification
	}{
		"queue cap": {
			func() error {
				return s.LimitSet(ctx, &store.LimitParams{Scope: store.LimitQueue, Name: "q", MaxRunning: 3})
			},
			func() error { return s.LimitSet(ctx, &store.LimitParams{Scope: store.LimitQueue, Name: "q"}) },
			store.Notification{Kind: store.JobsAvailable, Queue: "q"},
		},
		"queue rate": {
			func() error {
				return s.RateSet(ctx, &store.RateParams{Scope: store.LimitQueue, Name: "q", Rate: perMinute})
			},
			func() error { return s.RateSet(ctx, &store.RateParams{Scope: store.LimitQueue, Name: "q"}) },
			store.Notification{Kind: store.JobsAvailable, Queue: "q"},
		},
		"kind cap": {
			func() error {
				return s.LimitSet(ctx, &store.LimitParams{Scope: store.LimitKind, Name: "pdf", MaxRunning: 3})
			},
			func() error { return s.LimitSet(ctx, &store.LimitParams{Scope: store.LimitKind, Name: "pdf"}) },
			store.Notification{Kind: store.JobsAvailable},
		},
		"kind rate": {
			func() error {
				return s.RateSet(ctx, &store.RateParams{Scope: store.LimitKind, Name: "pdf", Rate: perMinute})
			},
			func() error { return s.RateSet(ctx, &store.RateParams{Scope: store.LimitKind, Name: "pdf"}) },
			store.Notification{Kind: store.JobsAvailable},
		},
	} {
		require.NoError(t, c.set(), name)
		require.NoError(t, c.clear(), name)
		require.Equal(t, c.want, sub.next(t), name)
		require.NoError(t, c.clear(), name) // not set: nothing
	}
	require.NoError(t, s.QueueSetPaused(ctx, "z", false))
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "z"}, sub.next(t))
}

// Subscribe does not reconnect: when its connection dies it returns the error, and the
// caller subscribes again.
func TestSubscribeEndsWhenConnectionDies(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	s := openStore(t, schema, nil)
	sub, _ := subscribe(t, s)

	var killed int
	require.NoError(t, connect(t).QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN "' || $1 || '_jobs"'`, schema).Scan(&killed))
	require.Equal(t, 1, killed)
	select {
	case err := <-sub.done:
		require.Error(t, err)
		require.False(t, errors.Is(err, context.Canceled))
		sub.done <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe did not return after its connection was terminated")
	}
}

// Subscribe returns the context's error when the caller stops it.
func TestSubscribeStopsWithContext(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	sub, cancel := subscribe(t, s)
	cancel()
	select {
	case err := <-sub.done:
		require.ErrorIs(t, err, context.Canceled)
		sub.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe did not return after its context ended")
	}
}

// With PollOnly, Subscribe listens to nothing and returns when its context ends.
func TestSubscribePollOnly(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	openStore(t, schema, nil) // migrates
	s, err := postgres.Open(t.Context(), postgres.Config{URL: databaseURL(), Schema: schema, PollOnly: true, MaxConns: testConns})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	notes := make(chan store.Notification, 10)
	go func() { done <- s.Subscribe(ctx, func(n store.Notification) { notes <- n }) }()
	_, err = s.JobInsertMany(t.Context(), insertParams("default", 1))
	require.NoError(t, err)
	var listeners int
	require.NoError(t, connect(t).QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE query = 'LISTEN "' || $1 || '_jobs"'`, schema).Scan(&listeners))
	require.Zero(t, listeners)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Empty(t, notes)
}

// A subscription without notifications pings its connection now and then, and goes on
// delivering afterwards.
func TestSubscribePingsWhenIdle(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	s := openStore(t, schema, nil)
	postgres.SetPingEvery(s, 20*time.Millisecond)
	sub, _ := subscribe(t, s)
	conn := connect(t)
	require.Eventually(t, func() bool {
		var pinged bool
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE application_name = 'hopper' AND query = '-- ping'`).Scan(&pinged))
		return pinged
	}, 5*time.Second, 10*time.Millisecond)
	_, err := s.JobInsertMany(t.Context(), insertParams("after-pings", 1))
	require.NoError(t, err)
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "after-pings"}, sub.next(t))
}

// Jobs that become scheduled (an enqueue for later, a retry's backoff) send their earliest
// run_at, so the leader promotes them on time without polling; a schedule changed anywhere
// sends SchedulesChanged.
func TestNotifyScheduledJobsAndSchedules(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	ctx := t.Context()
	sub, _ := subscribe(t, s)

	soon, later := s.Now().Add(time.Hour).Truncate(time.Microsecond), s.Now().Add(2*time.Hour)
	ps := insertParams("sched", 3)
	ps[0].RunAt, ps[1].RunAt = later, soon
	_, err := s.JobInsertMany(ctx, ps)
	require.NoError(t, err)
	got := []store.Notification{sub.next(t), sub.next(t)}
	require.ElementsMatch(t, []store.Notification{
		{Kind: store.JobsAvailable, Queue: "sched"},
		{Kind: store.JobsScheduled, At: time.UnixMicro(soon.UnixMicro())},
	}, got, "one insert: the queued job's queue and the earliest scheduled run_at")

	jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "sched", Limit: 1, WorkerID: "w", LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	retryAt := s.Now().Add(time.Minute).Truncate(time.Microsecond)
	errs, err := s.JobFinishMany(ctx, []*store.FinishParams{{ID: jobs[0].ID, Token: jobs[0].Token,
		State: hoppertype.StateScheduled, Outcome: hoppertype.OutcomeError, RunAt: retryAt, Error: "boom",
		Actor: hoppertype.ActorWorker}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Equal(t, store.Notification{Kind: store.JobsScheduled, At: time.UnixMicro(retryAt.UnixMicro())}, sub.next(t),
		"a retry's backoff")

	_, err = s.ScheduleUpsert(ctx, &store.Schedule{Name: "nightly", Spec: "0 3 * * *", Mode: "cron", TZ: "UTC",
		Kind: "noop", Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, CatchUp: "skip", Overlap: "skip",
		Source: store.SourceAPI, LastFireAt: s.Now(), NextFireAt: s.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, store.Notification{Kind: store.SchedulesChanged}, sub.next(t))
}

// listenRaw LISTENs on a schema's channel and returns the payloads as they arrive.
func listenRaw(t *testing.T, schema string) <-chan string {
	t.Helper()
	conn := connect(t)
	_, err := conn.Exec(t.Context(), "LISTEN "+pgx.Identifier{schema + "_jobs"}.Sanitize())
	require.NoError(t, err)
	payloads := make(chan string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			payloads <- n.Payload
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return payloads
}

// nextPayload returns the next payload, failing the test after 10 s without one.
func nextPayload(t *testing.T, payloads <-chan string) string {
	t.Helper()
	select {
	case p := <-payloads:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no notification within 10 s")
	}
	return ""
}

// The store's own inserts into a queue notify at their commit for a burst, then at one wake-up
// per WakeInterval: the ones held meanwhile together when the interval is over, with the
// smallest of their ids (what the claim cursors need). Another queue, and an insert in the application's
// transaction, notify at once. Scheduled jobs are held the same way, with their earliest run_at.
// The wake-ups are paced on a fake clock, which stands still while the test inserts.
func TestHeldWakeUps(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	const interval = 3 * time.Second
	s, err := postgres.Open(t.Context(), postgres.Config{URL: databaseURL(), Schema: schema, MaxConns: testConns, WakeInterval: interval})
	require.NoError(t, err)
	defer s.Close()
	pace := clock.NewFake(time.Now())
	postgres.SetWakeClock(s, pace)
	payloads := listenRaw(t, schema)
	insert := func(queue string, runAt time.Time) string {
		t.Helper()
		p := insertParams(queue, 1)
		p[0].RunAt = runAt
		_, err := s.JobInsertMany(t.Context(), p)
		require.NoError(t, err)
		return p[0].ID
	}

	for range postgres.WakeBurst {
		id := insert("q", time.Time{})
		require.Equal(t, "q:q "+id, nextPayload(t, payloads), "each insert of the burst notifies at its commit")
	}
	b, c := insert("q", time.Time{}), insert("q", time.Time{})
	other := insert("other", time.Time{})
	require.Equal(t, "q:other "+other, nextPayload(t, payloads), "another queue is not held")
	soon, later := time.Now().Add(time.Hour).Truncate(time.Microsecond), time.Now().Add(2*time.Hour)
	for range postgres.WakeBurst {
		insert("q", later)
		require.Equal(t, "s:"+strconv.FormatInt(later.Truncate(time.Microsecond).UnixMicro(), 10), nextPayload(t, payloads))
	}
	insert("q", soon) // held: the scheduled jobs' burst is spent

	tx, err := connect(t).Begin(t.Context())
	require.NoError(t, err)
	inTx := insertParams("q", 1)
	_, err = s.Tx(tx).JobInsertMany(t.Context(), inTx)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))
	require.Equal(t, "q:q "+inTx[0].ID, nextPayload(t, payloads), "the application's transaction notifies at its commit")

	// The held wake-ups wait for the interval: one timer, due when it is over.
	pace.Advance(interval - time.Microsecond)
	require.Equal(t, 1, pace.Pending(), "held wake-ups wait for the interval")
	pace.Advance(time.Microsecond)
	held := []string{nextPayload(t, payloads), nextPayload(t, payloads)}
	require.ElementsMatch(t, []string{"q:q " + min(b, c), "s:" + strconv.FormatInt(soon.UnixMicro(), 10)}, held)
	select {
	case p := <-payloads:
		t.Fatalf("unexpected notification %q", p)
	case <-time.After(200 * time.Millisecond):
	}
}
