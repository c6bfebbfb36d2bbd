package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// peek is where a claim of queue with kinds would start at now: nil for the start.
func (c *claimCursors) peek(queue, kinds string, now time.Time) *claimCursor {
	use := c.start(queue, kinds, now)
	c.done(use, false, nil, now)
	return use.from
}

// cursorID is the id of the cursor of queue and kinds, "" for none, whether or not a claim
// would use it now.
func (c *claimCursors) cursorID(queue, kinds string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.byQueue[queue][kinds]; cur != nil {
		return cur.id
	}
	return ""
}

// runningClaims is the number of claims between start and done.
func (c *claimCursors) runningClaims() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.running)
}

func TestClaimCursorBookkeeping(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	job := func(p int, id string) *hoppertype.JobRow { return &hoppertype.JobRow{ID: id, Priority: p} }
	var c claimCursors

	// Without a subscription nothing is recorded: a wake-up could go unheard.
	c.done(c.start("q", "", t0), true, job(0, "b"), t0)
	require.Nil(t, c.peek("q", "", t0))

	c.subscribed(+1)
	use := c.start("q", "", t0)
	require.Nil(t, use.from, "no cursor yet: from the start")
	c.done(use, true, job(2, "b"), t0)
	from := c.peek("q", "", t0.Add(time.Millisecond))
	require.NotNil(t, from)
	require.Equal(t, 2, from.priority)
	require.Equal(t, "b", from.id)
	require.Nil(t, c.peek("q", "k1", t0), "a cursor is per kinds filter")
	require.Nil(t, c.peek("other", "", t0), "and per queue")

	// A claim that found nothing keeps the cursor; one that found jobs moves it.
	use = c.start("q", "", t0)
	c.done(use, true, nil, t0)
	require.Equal(t, "b", c.peek("q", "", t0).id)
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	require.Equal(t, "d", c.peek("q", "", t0).id)

	// Wake-ups: jobs after the cursor leave it; jobs before it, an unknown id, or any queue
	// ("") forget it.
	c.heard("q", "e")
	require.NotNil(t, c.peek("q", "", t0))
	c.heard("other", "a")
	require.NotNil(t, c.peek("q", "", t0))
	c.heard("q", "c")
	require.Nil(t, c.peek("q", "", t0))
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	c.heard("q", "")
	require.Nil(t, c.peek("q", "", t0))
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	c.heard("", "z")
	require.Nil(t, c.peek("q", "", t0))

	// A claim running while the cursor was forgotten records nothing: what it saw may be
	// older than what was heard.
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	use = c.start("q", "", t0)
	c.heard("q", "a")
	c.done(use, true, job(2, "f"), t0)
	require.Nil(t, c.peek("q", "", t0))

	// A claim that heard, while it ran, of a job before the position it found leaves the cursor
	// where it is: its snapshot may not have held that job. Jobs heard after it do not matter.
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	use = c.start("q", "", t0)
	c.heard("q", "e")
	c.done(use, true, job(2, "g"), t0)
	require.Equal(t, "d", c.peek("q", "", t0).id, "e was heard during the claim that found g")
	use = c.start("q", "", t0)
	c.heard("q", "h")
	c.heard("other", "a")
	c.done(use, true, job(2, "g"), t0)
	require.Equal(t, "g", c.peek("q", "", t0).id)
	// A wake-up without an id, a cap and a new subscription make a running claim record nothing.
	for name, during := range map[string]func(){
		"no id":     func() { c.heard("q", "") },
		"any queue": func() { c.heard("", "z") },
		"a cap":     func() { c.forget("q", "") },
		"a subscription began and ended": func() {
			c.subscribed(+1)
			c.subscribed(-1)
		},
	} {
		c.done(c.start("q", "", t0), true, job(2, "g"), t0)
		use = c.start("q", "", t0)
		during()
		c.done(use, true, job(2, "k"), t0)
		require.Empty(t, c.cursorID("q", ""), name)
	}
	// A claim that failed records nothing, and no claim stays registered after done.
	c.done(c.start("q", "", t0), true, job(2, "g"), t0)
	c.done(c.start("q", "", t0), false, job(2, "k"), t0)
	require.Equal(t, "g", c.peek("q", "", t0).id)
	require.Zero(t, c.runningClaims())

	// At least every claimRescan a claim scans from the start.
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	require.NotNil(t, c.peek("q", "", t0.Add(claimRescan-time.Millisecond)))
	require.Nil(t, c.peek("q", "", t0.Add(claimRescan)))

	// A scan from the start that took long stretches the time to the next one.
	t1 := t0.Add(claimRescan)
	use = c.start("q", "", t1)
	require.Nil(t, use.from)
	c.done(use, true, job(2, "d"), t1.Add(50*time.Millisecond))
	require.NotNil(t, c.peek("q", "", t1.Add(4*time.Second)))
	require.Nil(t, c.peek("q", "", t1.Add(5*time.Second)))

	// A scan from the start that found nothing leaves a cursor just below the ids of the jobs
	// enqueued from then on, at the last job found's priority; a cursor found above that stays.
	c.heard("q", "")
	t2 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	wall := t2.Add(time.Hour) // the clock ids are drawn on, not the store's
	c.wall = func() time.Time { return wall }
	use = c.start("q", "", t2)
	require.Nil(t, use.from)
	c.done(use, true, nil, t2)
	from = c.peek("q", "", t2)
	require.NotNil(t, from, "an empty scan from the start sets a cursor")
	require.Equal(t, 2, from.priority)
	require.Equal(t, uuidV7Floor(wall.Add(-idClockSlack)), from.id, "the floor is on the clock ids are drawn on")
	above := uuidV7Floor(wall) + "-7000-8000-000000000000"
	c.done(c.start("q", "", t2), true, job(2, above), t2)
	use = c.start("q", "", t2.Add(claimRescan))
	require.Nil(t, use.from)
	c.done(use, true, nil, t2.Add(claimRescan))
	require.Equal(t, above, c.peek("q", "", t2.Add(claimRescan)).id, "an empty scan keeps a cursor above its own")
	t3 := t2.Add(5 * time.Second)
	wall = wall.Add(5 * time.Second)
	use = c.start("q", "", t3)
	require.Nil(t, use.from)
	c.done(use, true, nil, t3)
	require.Equal(t, uuidV7Floor(wall.Add(-idClockSlack)), c.peek("q", "", t3).id, "and moves one below it on")
	use = c.start("new", "", t2)
	c.done(use, true, nil, t2)
	require.Equal(t, 0, c.peek("new", "", t2).priority, "a queue never claimed from: the default priority")
	// An empty scan that heard, while it ran, of a job below its floor sets none: its snapshot
	// may have been taken before that job was committed.
	use = c.start("late", "", t2)
	c.heard("late", uuidV7Floor(wall.Add(-time.Minute))+"-7000-8000-000000000000")
	c.done(use, true, nil, t2)
	require.Nil(t, c.peek("late", "", t2))
	use = c.start("late", "", t2)
	c.heard("late", uuidV7Floor(wall)+"-7000-8000-000000000000")
	c.done(use, true, nil, t2)
	require.NotNil(t, c.peek("late", "", t2), "a job heard above the floor leaves it")

	// A cap forgets the cursor; so does the end of a subscription.
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	c.forget("q", "")
	require.Nil(t, c.peek("q", "", t0))
	c.done(c.start("q", "", t0), true, job(2, "d"), t0)
	c.subscribed(-1)
	require.Nil(t, c.peek("q", "", t0))
}

// uuidV7Floor sorts, as the jobs table's ids do (COLLATE "C", byte order), below every UUIDv7
// made at its time or later and above every one made earlier.
func TestUUIDv7Floor(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	mint := func(t time.Time) string {
		var b [16]byte
		ms := uint64(t.UnixMilli())
		for i := range 6 {
			b[i] = byte(ms >> (40 - 8*i))
		}
		b[6], b[8] = 0x70, 0x80 // version 7, RFC 4122 variant, the smallest of that millisecond
		return uuid.UUID(b).String()
	}
	floor := uuidV7Floor(at)
	require.Len(t, floor, 13)
	require.Less(t, floor, mint(at))
	require.Less(t, mint(at.Add(-time.Millisecond)), floor)
	require.Less(t, floor, uuid.Must(uuid.NewV7()).String(), "a job made now sorts after the floor of a past time")
	require.Less(t, uuidV7Floor(time.Now().Add(time.Hour)), uuidV7Floor(time.Now().Add(2*time.Hour)))
}

// The claim from a cursor starts its scan of priority $7 at id $8 in jobs_claim (an index
// condition, not a filter on rows already fetched), so the entries before it are not read.
func TestClaimCursorPlanStartsAtTheCursor(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	plan := explain(t, s, claimCursorSQL, nil, "default", 10, "w", int64(1e6), []string{}, 0, "0190")
	var conds []string
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "Index Cond") && strings.Contains(line, "priority =") {
			conds = append(conds, line)
		}
	}
	require.Len(t, conds, 1, plan)
	require.Contains(t, conds[0], "id >=", plan)
}

// A job that becomes claimable behind the cursor is claimed by the next claim once its wake-up
// is heard; one that no wake-up announces (its row was locked when a claim passed it) waits
// for the next scan from the start, at most claimRescan later.
func TestClaimCursorHole(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := t.Context()
	clk := clock.NewFake(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	s, err := Open(ctx, Config{URL: pgtest.URL(), Schema: pgtest.FreshSchema(t, "hopper_test_cursor_"), MaxConns: 4, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	notes := make(chan store.Notification, 100)
	subCtx, cancel := context.WithCancel(context.Background())
	subDone := make(chan error, 1)
	go func() { subDone <- s.Subscribe(subCtx, func(n store.Notification) { notes <- n }) }()
	t.Cleanup(func() { cancel(); <-subDone })
	next := func() store.Notification {
		t.Helper()
		select {
		case n := <-notes:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
			return store.Notification{}
		}
	}
	require.Equal(t, store.Subscribed, next().Kind)

	params := make([]*store.InsertParams, 10)
	for i := range params {
		params[i] = &store.InsertParams{ID: fmt.Sprintf("j-%02d", i), Kind: "noop", Queue: "q", Args: []byte(`{}`),
			MaxAttempts: 3, Actor: hoppertype.ActorAPI, Reason: "enqueue"}
	}
	_, err = s.JobInsertMany(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "q", next().Queue)
	claimFrom := func(queue string, n int) []string {
		t.Helper()
		jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: queue, Limit: n, WorkerID: "w", LeaseDuration: time.Minute})
		require.NoError(t, err)
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		return ids
	}
	claim := func(n int) []string { t.Helper(); return claimFrom("q", n) }

	// j-00 is locked by another writer as the first claim passes it, then stays queued.
	locker, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = locker.Exec(ctx, s.sql(`SELECT 1 FROM {schema}.jobs WHERE id = 'j-00' FOR UPDATE`))
	require.NoError(t, err)
	require.Equal(t, []string{"j-01", "j-02", "j-03"}, claim(3))
	require.NoError(t, locker.Rollback(ctx))
	require.Equal(t, []string{"j-04", "j-05"}, claim(2), "from the cursor: j-00 is behind it, unannounced")
	clk.Advance(claimRescan)
	require.Equal(t, []string{"j-00"}, claim(1), "the scan from the start after claimRescan finds it")

	// j-02 goes back to the queue: its wake-up forgets the cursor before it is delivered.
	require.Equal(t, []string{"j-06"}, claim(1))
	_, err = s.pool.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET state = 'queued', worker_id = NULL,
		lease_expires_at = NULL WHERE id = 'j-02'`))
	require.NoError(t, err)
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "q"}, next())
	require.Equal(t, []string{"j-02", "j-07"}, claim(2))

	// New jobs, after the cursor, leave it in place.
	_, err = s.JobInsertMany(ctx, []*store.InsertParams{{ID: "j-20", Kind: "noop", Queue: "q", Args: []byte(`{}`),
		MaxAttempts: 3, Actor: hoppertype.ActorAPI, Reason: "enqueue"}})
	require.NoError(t, err)
	require.Equal(t, "q", next().Queue)
	require.NotNil(t, s.cursors.peek("q", "", clk.Now()))
	require.Equal(t, []string{"j-08", "j-09", "j-20"}, claim(5))

	// A grouped job that finishes announces its queue, so the next job of its group, which
	// waited behind the cursor, is claimed.
	grouped := []*store.InsertParams{
		{ID: "g-00", GroupKey: "grp"}, {ID: "g-01", GroupKey: "grp"}, {ID: "h-00"},
	}
	for _, p := range grouped {
		p.Kind, p.Queue, p.Args, p.MaxAttempts, p.Actor, p.Reason = "noop", "g", []byte(`{}`), 3, hoppertype.ActorAPI, "enqueue"
	}
	_, err = s.JobInsertMany(ctx, grouped)
	require.NoError(t, err)
	require.Equal(t, "g", next().Queue)
	claimG := func() []string { t.Helper(); return claimFrom("g", 1) }
	require.Equal(t, []string{"g-00"}, claimG())
	require.Equal(t, []string{"h-00"}, claimG(), "g-01 waits for its group; the cursor passes it")
	require.Empty(t, claimG())
	_, err = s.pool.Exec(ctx, s.sql(`UPDATE {schema}.jobs SET state = 'completed', finished_at = now() WHERE id = 'g-00'`))
	require.NoError(t, err)
	require.Equal(t, store.Notification{Kind: store.JobsAvailable, Queue: "g"}, next())
	require.Equal(t, []string{"g-01"}, claimG())

	// An empty queue: the scan from the start finds nothing and leaves a cursor just below the
	// jobs enqueued from then on, which the next claim takes from it. A job whose id sorts
	// below the cursor (its client's clock is behind) is announced and claimed all the same.
	claimE := func() []string { t.Helper(); return claimFrom("e", 5) }
	insertE := func(id string) {
		t.Helper()
		_, err := s.JobInsertMany(ctx, []*store.InsertParams{{ID: id, Kind: "noop", Queue: "e", Args: []byte(`{}`),
			MaxAttempts: 3, Actor: hoppertype.ActorAPI, Reason: "enqueue"}})
		require.NoError(t, err)
		require.Equal(t, "e", next().Queue)
	}
	require.Empty(t, claimE())
	require.NotNil(t, s.cursors.peek("e", "", clk.Now()), "the empty scan left a cursor")
	later := uuid.Must(uuid.NewV7()).String()
	insertE(later)
	require.NotNil(t, s.cursors.peek("e", "", clk.Now()), "a job after the cursor leaves it")
	require.Equal(t, []string{later}, claimE())
	behind := uuidV7Floor(time.Now().Add(-time.Hour)) + "-7000-8000-000000000001"
	insertE(behind)
	require.Nil(t, s.cursors.peek("e", "", clk.Now()), "a job behind the cursor forgets it")
	require.Equal(t, []string{behind}, claimE())

	// A claim that fails leaves no registration behind.
	canceled, cancelClaim := context.WithCancel(ctx)
	cancelClaim()
	_, _, err = s.JobClaim(canceled, &store.ClaimParams{Queue: "e", Limit: 1, WorkerID: "w", LeaseDuration: time.Minute})
	require.Error(t, err)
	require.Zero(t, s.cursors.runningClaims())
}

// A claim from a cursor locks only the jobs it claims, when the higher priorities fill part of
// it and when the lower ones fill the rest: a job locked and left queued would be skipped by a
// concurrent claim, whose cursor would pass it unannounced. And it claims in claim order.
func TestClaimCursorLocksOnlyWhatItClaims(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	insert := func(priority int) string {
		t.Helper()
		id := uuid.Must(uuid.NewV7()).String()
		_, err := s.JobInsertMany(ctx, []*store.InsertParams{{ID: id, Kind: "noop", Queue: "default", Priority: priority,
			Args: []byte(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI, Reason: "enqueue"}})
		require.NoError(t, err)
		return id
	}
	var low []string
	for range 5 {
		low = append(low, insert(0))
	}
	high := insert(5)

	for name, c := range map[string]struct {
		priority int
		from     string
		want     []string
	}{
		"higher priorities fill part": {0, low[0], []string{high, low[0], low[1]}},
		"lower priorities fill part":  {5, high, []string{high, low[0], low[1]}},
	} {
		t.Run(name, func(t *testing.T) {
			tx, err := s.pool.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(context.Background()) //nolint:errcheck // the claim is only looked at
			rs, err := tx.Query(ctx, s.sql(claimCursorSQL), nil, "default", 3, "w", int64(60_000_000), []string{}, c.priority, c.from)
			require.NoError(t, err)
			jobs, err := scanJobs(rs)
			require.NoError(t, err)
			store.SortClaimed(jobs)
			var got []string
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			require.Equal(t, c.want, got)
			var unlocked int
			require.NoError(t, s.pool.QueryRow(ctx, s.sql(`SELECT count(*) FROM (SELECT id FROM {schema}.jobs
				WHERE state = 'queued' FOR UPDATE SKIP LOCKED) x`)).Scan(&unlocked))
			require.Equal(t, 6-3, unlocked, "the claim locked jobs it did not claim")
		})
	}
}
