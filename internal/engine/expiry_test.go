package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// sweepStore is a store whose sweep windows each take took of its fake clock (default 1 ms)
// and delete deleted jobs; the window numbered end reaches the end of the table (0: none
// does).
type sweepStore struct {
	store.Store
	clk     *clock.Fake
	took    time.Duration
	deleted int
	end     int
	windows int
}

func (s *sweepStore) JobSweepExpired(context.Context, *store.SweepParams) (*store.SweepResult, error) {
	s.clk.Advance(cmp.Or(s.took, time.Millisecond))
	s.windows++
	res := &store.SweepResult{Deleted: s.deleted, Next: strconv.Itoa(s.windows)}
	if s.windows == s.end {
		res.Next = ""
	}
	return res, nil
}

func (s *sweepStore) Now() time.Time { return s.clk.Now() }

func (s *sweepStore) StatsPrune(context.Context, time.Time) (int64, error) { return 0, nil }

func (s *sweepStore) SweepSettled(context.Context) ([]store.SettledWindow, error) { return nil, nil }

func (s *sweepStore) SweepSettle(context.Context, []store.SettledWindow) error { return nil }

// The walk goes on at once while it deletes, rests sweepIdlePause times a pass's length after a
// pass that found nothing to delete (a hundredth of the time walking), and starts again from the
// front SweepInterval after it reached the end. A pass reads sweepPass windows, or fewer when
// they took sweepPassTime.
func TestSweepPacesAWalkThatFindsNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		took         time.Duration // each window
		deleted, end int
		windows      int           // read in the pass
		want         time.Duration // after the pass's start
	}{
		{"nothing expired", 0, 0, 0, sweepPass, 20*time.Millisecond + 99*20*time.Millisecond},
		{"costly windows", 8 * time.Millisecond, 0, 0, 3, 24*time.Millisecond + 99*24*time.Millisecond},
		{"expired jobs", 0, 3, 0, sweepPass, 0},
		{"the end of the table", 0, 0, 5, 5, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			st := &sweepStore{clk: clk, took: c.took, deleted: c.deleted, end: c.end}
			e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1"})
			require.NoError(t, err)
			e.leader.set(clk.Now().Add(time.Hour), 1)
			m := newMaintainer(e)
			start := clk.Now()
			next, err := m.sweep(t.Context(), start)
			require.NoError(t, err)
			require.Equal(t, c.want, next.Sub(start))
			require.Equal(t, c.windows, st.windows)
			if c.end == 0 {
				require.Equal(t, strconv.Itoa(c.windows), m.sweeping.from, "the next pass goes on from there")
			} else {
				require.Empty(t, m.sweeping.from, "the next walk starts at the front")
			}
		})
	}
}

// tableStore is a jobs table for the sweep: rows in id order, each live until its end and
// expiring ttl after it. A window reads scan rows and takes 2 ms of the fake clock.
type tableStore struct {
	store.Store
	clk     *clock.Fake
	offset  time.Duration // the store's clock runs this far ahead of the engine's
	scan    int
	rows    []tableRow // deleted rows are marked gone until compacted
	gone    int
	read    int // rows the windows read
	deleted int
	// drawn, when set, makes ids UUIDv7 drawn at drawn plus a millisecond per job number
	// (else zero-padded numbers, which are never settled).
	drawn   time.Time
	settled []store.SettledWindow // as saved
	saves   int
	saveErr error
}

type tableRow struct {
	id       string
	end, exp time.Time
	gone     bool
}

func (s *tableStore) Now() time.Time { return s.clk.Now().Add(s.offset) }

func (s *tableStore) StatsPrune(context.Context, time.Time) (int64, error) { return 0, nil }

func (s *tableStore) SweepSettled(context.Context) ([]store.SettledWindow, error) {
	return slices.Clone(s.settled), nil
}

func (s *tableStore) SweepSettle(_ context.Context, ws []store.SettledWindow) error {
	s.saves++
	if s.saveErr != nil {
		return s.saveErr
	}
	s.settled = slices.Clone(ws)
	return nil
}

// add appends the job numbered n (the walk compares ids as bytes: numbers are zero-padded,
// UUIDv7 ids are hex of fixed width).
func (s *tableStore) add(n int, end time.Time, ttl time.Duration) {
	s.rows = append(s.rows, tableRow{id: s.id(n), end: end, exp: end.Add(ttl)})
}

func (s *tableStore) id(n int) string {
	if s.drawn.IsZero() {
		return fmt.Sprintf("%08d", n)
	}
	ms := fmt.Sprintf("%012x", s.drawn.UnixMilli()+int64(n))
	return fmt.Sprintf("%s-%s-7000-8000-%012x", ms[:8], ms[8:], n)
}

func (r tableRow) expired(now time.Time) bool { return !now.Before(r.end) && !now.Before(r.exp) }

// backlog is how many rows have expired but are still there.
func (s *tableStore) backlog() int {
	n := 0
	for _, r := range s.rows {
		if !r.gone && r.expired(s.Now()) {
			n++
		}
	}
	return n
}

func (s *tableStore) JobSweepExpired(_ context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	s.clk.Advance(2 * time.Millisecond)
	i, _ := slices.BinarySearchFunc(s.rows, p.After, func(r tableRow, after string) int {
		if r.id <= after {
			return -1
		}
		return 1
	})
	res, seen := &store.SweepResult{}, 0
	for ; i < len(s.rows) && seen < s.scan; i++ {
		r := &s.rows[i]
		if r.gone {
			continue
		}
		seen++
		res.Next = r.id
		switch {
		case r.expired(p.Now):
			r.gone = true
			s.gone++
			s.deleted++
			res.Deleted++
			res.Expired++
		case p.Now.Before(r.end):
			res.Unended++
		case !p.Now.Before(r.end) && (res.Soonest.IsZero() || r.exp.Before(res.Soonest)):
			res.Soonest = r.exp
		}
	}
	if seen < s.scan {
		res.Next = ""
	}
	s.read += seen
	if s.gone > len(s.rows)/4 {
		s.rows = slices.DeleteFunc(s.rows, func(r tableRow) bool { return r.gone })
		s.gone = 0
	}
	return res, nil
}

// sweepSim runs a leader's sweep against a tableStore whose clock is an hour ahead of the
// engine's, a second at a time: each second adds its jobs, then the sweep runs whenever it
// is due within the second.
type sweepSim struct {
	t    *testing.T
	clk  *clock.Fake
	st   *tableStore
	m    *maintainer
	next time.Time
}

func newSweepSim(t *testing.T) *sweepSim {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := &tableStore{clk: clk, scan: 50, offset: time.Hour}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1"})
	require.NoError(t, err)
	e.leader.set(clk.Now().Add(24*time.Hour), 1)
	return &sweepSim{t: t, clk: clk, st: st, m: newMaintainer(e), next: clk.Now()}
}

// second adds jobs (numbered on from id) and runs the sweeps due within the second.
func (s *sweepSim) second(add func(now time.Time)) {
	add(s.st.Now())
	end := s.clk.Now().Add(time.Second)
	for s.next.Before(end) {
		if d := s.next.Sub(s.clk.Now()); d > 0 {
			s.clk.Advance(d)
		}
		next, err := s.m.sweep(s.t.Context(), s.clk.Now())
		require.NoError(s.t, err)
		s.next = next
	}
	s.clk.Advance(end.Sub(s.clk.Now()))
}

// Jobs that end at a steady rate and expire five minutes later are deleted as they expire, not
// in bursts: the head walk keeps up with the front of the expiring jobs, past the dead letters
// (kept a week) behind it, the jobs retried for a while and the retained jobs before them,
// which the full walk reads in its paced walks of the table; and again after a lull.
func TestSweepKeepsUpWithTheFront(t *testing.T) {
	t.Parallel()
	sim := newSweepSim(t)
	const perSecond = 100
	id := 0
	for range 5000 { // retained before the run
		sim.st.add(id, sim.st.Now(), 24*time.Hour)
		id++
	}
	worst := 0
	for sec := range 20 * 60 {
		lull := sec >= 9*60 && sec < 11*60 // nothing ends for two minutes
		sim.second(func(now time.Time) {
			for i := range perSecond {
				if lull {
					break
				}
				switch {
				case i == 0: // a dead letter
					sim.st.add(id, now, 7*24*time.Hour)
				case i == 1: // retried: it ends half a minute later
					sim.st.add(id, now.Add(30*time.Second), 5*time.Minute)
				default:
					sim.st.add(id, now, 5*time.Minute)
				}
				id++
			}
		})
		if sec >= 5*60 && sec%5 == 0 { // from when the first jobs expire
			worst = max(worst, sim.st.backlog())
		}
	}
	require.Greater(t, sim.st.deleted, 13*60*perSecond*97/100, "the expired jobs were deleted")
	require.LessOrEqual(t, worst, 2*perSecond, "at most two seconds of expired jobs wait for the sweep")
	// The full walk reads the 30,000 jobs of the last five minutes (and the retained ones)
	// about once a minute; the head walk's laps a few windows at the front.
	require.Less(t, sim.st.read, 40*sim.st.deleted/3, "rows read")
	t.Logf("rows read %d for %d deleted; worst backlog %d", sim.st.read, sim.st.deleted, worst)
}

// With few jobs a window holds more than SweepInterval of expiries, and after a lull nothing
// expires soon anywhere: the head walk's laps still read a few windows at the front, not the
// whole unexpired tail each time, and keep up.
func TestSweepLapsStayShortWithFewJobs(t *testing.T) {
	t.Parallel()
	sim := newSweepSim(t)
	id, worst := 0, 0
	for sec := range 60 * 60 {
		lull := sec >= 15*60 && sec < 20*60
		sim.second(func(now time.Time) {
			if !lull && sec%2 == 0 {
				sim.st.add(id, now, 30*time.Minute)
				id++
			}
		})
		if sec >= 30*60 {
			worst = max(worst, sim.st.backlog())
		}
	}
	require.Greater(t, sim.st.deleted, 700, "the jobs of the first half hour")
	require.LessOrEqual(t, worst, 1, "each job is deleted within a lap of its expiry")
	// 900 unexpired jobs: the full walk reads them about once a minute (some 54,000 in
	// the hour); laps that ran on to the end of the table would read them every few seconds.
	require.Less(t, sim.st.read, 150_000, "rows read")
	t.Logf("rows read %d for %d deleted; worst backlog %d", sim.st.read, sim.st.deleted, worst)
}

// Without jobs that expire soon the head walk waits for the earliest expiry a full walk saw:
// until then only the full walk reads the table, once a SweepInterval.
func TestSweepHeadWalkWaitsForTheEarliestExpiry(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := &tableStore{clk: clk, scan: 50, offset: -time.Hour}
	for n := range 1000 {
		st.add(n, st.Now(), 24*time.Hour+time.Duration(1000-n)*time.Second)
	}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1"})
	require.NoError(t, err)
	e.leader.set(clk.Now().Add(48*time.Hour), 1)
	m := newMaintainer(e)
	first := st.rows[999].exp.Add(-st.offset) // the last window holds the earliest expiry; on the engine's clock
	next, walks := clk.Now(), 0
	for end := clk.Now().Add(5 * time.Minute); next.Before(end); {
		if d := next.Sub(clk.Now()); d > 0 {
			clk.Advance(d)
		}
		next, err = m.sweep(t.Context(), clk.Now())
		require.NoError(t, err)
		if m.sweeping.from == "" {
			walks++
			require.True(t, m.sweeping.headKnown)
			require.Equal(t, "00000949", m.sweeping.head, "the window of the earliest expiry")
			require.Equal(t, first, m.sweeping.headAt)
		}
	}
	require.Equal(t, 1000*walks, st.read, "each walk read the table once; no lap")
	require.GreaterOrEqual(t, walks, 4)

	clk.Advance(first.Sub(clk.Now()))
	before := st.read
	_, err = m.sweepHead(t.Context(), clk.Now())
	require.NoError(t, err)
	require.Equal(t, 999, len(st.rows)-st.gone, "the lap deleted the job that expired")
	require.Less(t, st.read-before, 200, "in a lap from its window")
}

// A lap ends after sweepPass windows in a row with nothing to delete past the front, even
// when the last lap ended far beyond them: what a lap reads stays bounded when jobs stopped
// ending in id order.
func TestSweepLapEndsAfterAPassOfNothing(t *testing.T) {
	t.Parallel()
	sim := newSweepSim(t)
	for n := range 3000 { // each window expires within the minute; nothing yet
		sim.st.add(n, sim.st.Now(), 30*time.Second)
	}
	sim.m.sweeping = sweepWalks{headKnown: true, end: fmt.Sprintf("%08d", 2950), fullAt: sim.clk.Now().Add(time.Hour)}
	_, err := sim.m.sweepHead(t.Context(), sim.clk.Now())
	require.NoError(t, err)
	require.Equal(t, sweepPass*50, sim.st.read, "a pass of windows, not the 2,950 jobs before where the last lap ended")
	require.False(t, sim.m.sweeping.lapping, "the lap ended")
	require.Empty(t, sim.m.sweeping.head, "the front stays at the first window")
}

// newSettleSim is a leader over a table of 1,000 jobs (20 windows) that ended now and are
// kept a day, their ids drawn from an hour before now on the fake clock, which is also the
// maintainer's wall clock.
func newSettleSim(t *testing.T, st *tableStore) (*clock.Fake, *maintainer) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st.clk, st.scan = clk, 50
	if st.rows == nil {
		st.drawn = clk.Now().Add(-time.Hour)
		for n := range 1000 {
			st.add(n, clk.Now(), 24*time.Hour+time.Duration(n)*time.Second)
		}
	}
	return clk, newSettleLeader(t, st)
}

func newSettleLeader(t *testing.T, st *tableStore) *maintainer {
	t.Helper()
	e, err := New(Config{Store: st, Clock: st.clk, WorkerID: "node-1"})
	require.NoError(t, err)
	e.leader.set(st.clk.Now().Add(48*time.Hour), 1)
	m := newMaintainer(e)
	m.wall = st.clk.Now
	return m
}

// walk runs the full walk of m through the whole table and returns the rows it read.
func walk(t *testing.T, st *tableStore, m *maintainer) int {
	t.Helper()
	before := st.read
	for first := true; first || m.sweeping.from != ""; first = false {
		_, err := m.sweepFull(t.Context(), st.clk.Now())
		require.NoError(t, err)
	}
	return st.read - before
}

// A window whose jobs have all ended and none expired is read once, then skipped until its
// earliest expiry; the windows found so are saved, and a new leader skips them too.
func TestSweepSkipsSettledWindows(t *testing.T) {
	t.Parallel()
	st := &tableStore{}
	clk, m := newSettleSim(t, st)
	require.Equal(t, 1000, walk(t, st, m), "the first walk reads every window")
	require.Len(t, st.settled, 20, "every full window is settled (new jobs go after the last)")
	require.Equal(t, st.rows[49].id, st.settled[1].After, "windows are saved in id order")
	require.Equal(t, st.rows[0].exp, st.settled[0].Soonest, "with the earliest expiry of their jobs")

	clk.Advance(time.Minute)
	require.Zero(t, walk(t, st, m), "the next walk reads only the end of the table")
	require.Equal(t, 1, st.saves, "and saves nothing: the settled windows did not change")
	require.True(t, m.sweeping.from == "" && !m.sweptBefore().IsZero(), "each walk still completes")

	other := newSettleLeader(t, st)
	require.Zero(t, walk(t, st, other), "a new leader skips the saved windows")

	// The first window's first job expires: that window is read again (its job deleted), then
	// read once more by the next walk, which finds it settled anew; the others are skipped.
	clk.Advance(st.rows[0].exp.Sub(clk.Now()))
	require.Equal(t, 50, walk(t, st, other), "the window whose job expired")
	require.Equal(t, 1, st.deleted)
	require.Equal(t, 2, st.saves, "the first window changed")
	require.Len(t, st.settled, 19, "a window that deleted jobs is not settled")
	clk.Advance(500 * time.Millisecond) // before the next job expires
	require.Equal(t, 50, walk(t, st, other), "the first window once more, which now ends inside the next: the rest of that is skipped")
	require.Len(t, st.settled, 20)
	require.Equal(t, st.rows[1].exp, st.settled[0].Soonest, "its new earliest expiry")
	require.Equal(t, st.rows[50].id, st.settled[1].After, "the next one skipped from where the first ended")
}

// A window with a job that has not ended is read on every walk, as is one whose ids were drawn
// within sweepIDSkew of now (a node whose clock is behind may still add jobs to it).
func TestSweepReadsUnsettledWindows(t *testing.T) {
	t.Parallel()
	st := &tableStore{}
	clk, m := newSettleSim(t, st)
	st.rows[10].end = clk.Now().Add(time.Hour)                        // live for another hour
	st.drawn = clk.Now().Add(-30*time.Second - 1000*time.Millisecond) // jobs 1000 on, drawn 30 s ago
	for n := 1000; n < 1100; n++ {
		st.add(n, clk.Now(), 24*time.Hour)
	}
	require.Equal(t, 1100, walk(t, st, m))
	clk.Advance(10 * time.Second)
	require.Equal(t, 50+100, walk(t, st, m), "the window of the live job and the two drawn within the skew")
	clk.Advance(30 * time.Second)
	require.Equal(t, 50+100, walk(t, st, m), "the jobs drawn 70 s ago: read once more, now settled")
	clk.Advance(10 * time.Second)
	require.Equal(t, 50, walk(t, st, m), "only the window of the live job")
}

// A save that fails is logged and tried again at the end of the next walk, changed or not.
func TestSweepSavesSettledWindowsAgain(t *testing.T) {
	t.Parallel()
	st := &tableStore{saveErr: errors.New("database is locked")}
	clk, m := newSettleSim(t, st)
	walk(t, st, m)
	require.Equal(t, 1, st.saves)
	require.Empty(t, st.settled)
	st.saveErr = nil
	clk.Advance(time.Minute)
	require.Zero(t, walk(t, st, m), "the windows are skipped from memory")
	require.Equal(t, 2, st.saves)
	require.Len(t, st.settled, 20)
}

func TestSettledWindow(t *testing.T) {
	t.Parallel()
	wall := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	soonest := wall.Add(time.Hour)
	old := (&tableStore{drawn: wall.Add(-sweepIDSkew)}).id(0)
	recent := (&tableStore{drawn: wall.Add(-sweepIDSkew + time.Millisecond)}).id(0)
	for _, c := range []struct {
		name string
		res  store.SweepResult
		ok   bool
	}{
		{"settled", store.SweepResult{Next: old, Soonest: soonest}, true},
		{"the last window", store.SweepResult{Soonest: soonest}, false},
		{"jobs deleted", store.SweepResult{Next: old, Soonest: soonest, Deleted: 1, Expired: 1}, false},
		{"a job expired and kept", store.SweepResult{Next: old, Soonest: soonest, Expired: 1}, false},
		{"a job not ended", store.SweepResult{Next: old, Soonest: soonest, Unended: 1}, false},
		{"no expiry", store.SweepResult{Next: old}, false},
		{"ids drawn within the skew", store.SweepResult{Next: recent, Soonest: soonest}, false},
		{"not a UUIDv7", store.SweepResult{Next: "00000049", Soonest: soonest}, false},
		{"a UUIDv4", store.SweepResult{Next: "0f8fad5b-d9cb-469f-a165-70867728950e", Soonest: soonest}, false},
	} {
		w, ok := settledWindow("a", &c.res, wall)
		require.Equal(t, c.ok, ok, c.name)
		if ok {
			require.Equal(t, store.SettledWindow{After: "a", Last: old, Soonest: soonest}, w)
		}
	}
}
