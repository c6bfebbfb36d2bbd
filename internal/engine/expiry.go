package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/store"
)

// Result retention (contract 12): when a job ends, its record is given an expiry; reads
// treat it as gone from then on, and the leader's sweep deletes it.

// Defaults of Config.ResultTTL, Config.DeadLetterRetention and Config.SweepInterval.
const (
	DefaultResultTTL           = 24 * time.Hour
	DefaultDeadLetterRetention = 7 * 24 * time.Hour
	DefaultSweepInterval       = time.Minute
)

// The sweep is two walks of the jobs table in id order, a window at a time, which delete the
// expired jobs of each window they read:
//
//   - The full walk goes through the whole table, then starts again at the front
//     SweepInterval later. It finds every expired job, whatever its retention, but in a table
//     of many retained jobs one walk takes minutes (it is paced, below), and the jobs that
//     expire meanwhile pile up: deleted in bursts of millions, which held up the writer
//     (docs/benchmarks.md#at-scale).
//   - The head walk keeps up with the front of the expiring jobs. Jobs mostly end in id order
//     with one retention, so they expire in id order too: behind the front everything expired
//     was deleted, and after it nothing has expired yet. The head walk starts at the front,
//     deletes what expired since its last lap and stops where nothing more is due (see
//     sweepHead); the next lap starts at the front again, moved on past the windows that no
//     longer hold jobs expiring within SweepInterval (the jobs left there are kept for long,
//     like dead letters, or are still live: the full walk takes those).
//     The full walk finds the front: the first window of each of its walks that holds jobs
//     expiring within SweepInterval. A walk that finds none starts the head walk at the
//     window of the earliest expiry it saw, when that comes (none: the head walk stops).
//
// sweepWindow bounds the jobs one sweep transaction looks at, so a sweep never holds
// SQLite's single writer (or PostgreSQL row locks) for long; sweepPass bounds the windows of
// one pass of either walk, so a long walk does not hold up promotion and rescue. A pass of the
// full walk also ends after the window that takes it past sweepPassTime: windows of jobs just
// worked cost tens of milliseconds each on PostgreSQL (the first read of freshly updated rows
// prunes and hints their pages), and a new leader whose walk skips the settled windows
// reaches them at once; read back to back they raised the p99 of the jobs started meanwhile
// several times over (docs/benchmarks.md#settled-windows-2026-11-28-later).
//
// sweepIdlePause paces the walks where they find nothing to delete: a pass that deleted
// nothing is followed by a rest of sweepIdlePause times its own length, so that walking jobs
// which have not expired takes at most a hundredth of the time of whoever walks them (the
// leader and the database). Unpaced, the walk read the windows of a table of 10 million
// retained jobs back to back and took more CPU than the jobs being worked; at a twentieth it
// still raised the p99 of the jobs started meanwhile by 1–2 ms on both stores
// (docs/benchmarks.md#at-scale). A walk through 10 million retained jobs so takes about a
// quarter of an hour: it is there for the jobs the head walk leaves (kept longer, ended out of
// order), and an expired job is hidden from reads until it is deleted. A pass that deleted
// jobs is followed by the next at once: expired jobs are a backlog.
//
// sweepHeadRest is the least rest between two laps of the head walk: each lap reads the window
// at the front at least once, and deletes what expired in about this long.
//
// Settled windows: a window the full walk read whose jobs had all ended and none expired holds
// nothing due before the earliest expiry among them (an ended job's expiry never changes; new
// jobs take new ids, after it). The full walk skips such a window until then without reading
// it, and saves the settled windows at the end of each walk that changed them
// (store.SettledWindow), so that the next leader skips them too. A table of millions of
// retained jobs then costs a walk only once, not every SweepInterval (and not on every
// restart or change of leader): afterwards a walk reads the windows whose jobs have begun to
// expire or are still live. sweepIDSkew bounds the clocks' skew this trusts: a window is
// taken as settled only when its last id was drawn (UUIDv7 ids hold their time) at least that
// long ago, so that the jobs enqueued since, on any node whose clock is less far behind, take
// ids after it. A job that does land in a settled window (a clock further behind) is deleted
// late, when its window is read again; it is hidden from reads from its expiry on, as every
// expired job is.
const (
	sweepWindow    = 5000
	sweepPass      = 20
	sweepIdlePause = 99
	sweepHeadRest  = 500 * time.Millisecond
	sweepIDSkew    = time.Minute
	sweepPassTime  = 20 * time.Millisecond
)

// ResultTTLer is a Unit whose kind sets how long its completed and canceled jobs are kept.
type ResultTTLer interface {
	// ResultTTL is the kind's retention; 0 defers to the engine's.
	ResultTTL() time.Duration
}

// Retention is how long a job that ends in state is kept: the dead-letter retention for a
// failed job; otherwise the job's own result TTL, then its kind's (u, which may be nil), then
// the engine's.
func (e *Engine) Retention(row *hoppertype.JobRow, u attempt.Unit, state hoppertype.JobState) time.Duration {
	if state == hoppertype.StateFailed {
		return e.cfg.DeadLetterRetention
	}
	if row != nil && row.ResultTTL > 0 {
		return row.ResultTTL
	}
	if k, ok := u.(ResultTTLer); ok {
		if d := k.ResultTTL(); d > 0 {
			return d
		}
	}
	return e.cfg.ResultTTL
}

// ExpiresAt is when a job that ends in state now may be removed; zero for a state that is
// not terminal. Every path that ends a job (local outcomes, remote workers' Complete and
// Fail, cancels) takes its expiry from here.
func (e *Engine) ExpiresAt(row *hoppertype.JobRow, u attempt.Unit, state hoppertype.JobState) time.Time {
	if !state.Terminal() {
		return time.Time{}
	}
	return e.clock.Now().Add(e.Retention(row, u, state))
}

// stampExpiry sets the expiry of an outcome that ends its job, unless it has one.
func (e *Engine) stampExpiry(p *store.FinishParams, row *hoppertype.JobRow, u attempt.Unit) {
	if p.ExpiresAt.IsZero() {
		p.ExpiresAt = e.ExpiresAt(row, u, p.State)
	}
}

// sweep runs the passes of the sweep's walks that are due (see sweepWindow) while this
// process leads, and returns when the next is due.
func (m *maintainer) sweep(ctx context.Context, now time.Time) (time.Time, error) {
	w := &m.sweeping
	if w.headKnown && !now.Before(w.headAt) {
		next, err := m.sweepHead(ctx, now)
		if err != nil {
			return time.Time{}, err
		}
		w.headAt = next
	}
	if !now.Before(w.fullAt) {
		next, err := m.sweepFull(ctx, now)
		if err != nil {
			return time.Time{}, err
		}
		w.fullAt = next
	}
	if w.headKnown && w.headAt.Before(w.fullAt) {
		return w.headAt, nil
	}
	return w.fullAt, nil
}

// sweepWalks is where the sweep's two walks are, for the maintainer's run loop.
type sweepWalks struct {
	from  string    // where the full walk goes on
	began time.Time // when this walk of the table began (store time)
	found bool      // the full walk found the front in this walk of the table
	// The earliest expiry this walk of the table saw, and the window where.
	earliest     time.Time
	earliestFrom string
	fullAt       time.Time // when the full walk's next pass is due
	// settled are the windows the full walk skips until their Soonest, in id order: those the
	// last walk found (or the store kept, loaded as a walk starts after this process gained
	// the leadership); settling are those this walk found or skipped, in the order it went.
	settled   []store.SettledWindow
	settling  []store.SettledWindow
	loaded    bool
	loadedFor int  // the count of gained leaderships settled was loaded for
	unsaved   bool // the last save failed

	headKnown bool      // a full walk found the front: the head walk runs
	head      string    // the front of the expiring jobs: where the head walk's laps start
	headAt    time.Time // when the head walk's next pass is due
	lapping   bool      // a lap stopped at sweepPass windows and goes on from at
	at        string    // where the lap goes on
	end       string    // where the last lap ended
	pinned    bool      // the lap found the front: it moves head no further
	dry       int       // windows in a row the lap deleted nothing in
	soonest   time.Time // the earliest expiry the lap saw
}

// window sweeps one window after from; soon says whether any of its jobs that are left expire
// within SweepInterval.
func (m *maintainer) window(ctx context.Context, from string) (res *store.SweepResult, soon bool, err error) {
	now := m.e.store.Now()
	res, err = m.e.store.JobSweepExpired(ctx, &store.SweepParams{Now: now, After: from, Scan: sweepWindow})
	if err != nil {
		return nil, false, err
	}
	return res, m.soon(now, res.Soonest), nil
}

// soon says whether an expiry (zero: none) comes within SweepInterval of now (store time).
func (m *maintainer) soon(now, expiry time.Time) bool {
	return !expiry.IsZero() && expiry.Before(now.Add(m.e.cfg.SweepInterval))
}

// fullWindow is the full walk's window after from: skipped to the end of the settled window
// that holds from while none of its jobs has expired (read says whether it was read), else
// swept and, when it turns out settled, recorded as such. A window read anew may end inside a
// settled one (jobs before it were deleted): the rest of that one is skipped as the next.
func (m *maintainer) fullWindow(ctx context.Context, from string) (res *store.SweepResult, soon, read bool, err error) {
	w := &m.sweeping
	if s, ok := settledAt(w.settled, from); ok {
		if now := m.e.store.Now(); now.Before(s.Soonest) {
			s.After = from
			w.settling = append(w.settling, s)
			return &store.SweepResult{Next: s.Last, Soonest: s.Soonest}, m.soon(now, s.Soonest), false, nil
		}
	}
	res, soon, err = m.window(ctx, from)
	if err != nil {
		return nil, false, true, err
	}
	if s, ok := settledWindow(from, res, m.wall()); ok {
		w.settling = append(w.settling, s)
	}
	return res, soon, true, nil
}

// settledAt is the window of ws (in id order) that holds the ids just after from, if any.
func settledAt(ws []store.SettledWindow, from string) (store.SettledWindow, bool) {
	i, _ := slices.BinarySearchFunc(ws, from, func(w store.SettledWindow, from string) int {
		if w.After <= from {
			return -1
		}
		return 1
	})
	if i == 0 || from >= ws[i-1].Last {
		return store.SettledWindow{}, false
	}
	return ws[i-1], true
}

// settledWindow is the window after from that res read as a settled window (see sweepIDSkew), if it
// is one: every job in it has ended, none has expired, it is not the table's last window
// (where new jobs go) and its last id was drawn sweepIDSkew before wall (the system's clock,
// which ids are drawn on) or earlier.
func settledWindow(from string, res *store.SweepResult, wall time.Time) (store.SettledWindow, bool) {
	if res.Next == "" || res.Deleted > 0 || res.Expired > 0 || res.Unended > 0 || res.Soonest.IsZero() {
		return store.SettledWindow{}, false
	}
	drawn, ok := idTime(res.Next)
	if !ok || wall.Sub(drawn) < sweepIDSkew {
		return store.SettledWindow{}, false
	}
	return store.SettledWindow{After: from, Last: res.Next, Soonest: res.Soonest}, true
}

// SettleSweep walks the whole jobs table of st once, unpaced, as the sweep's full walk does
// (deleting what expired), and saves the settled windows it found: what a store's leader has
// done after its first walk. It is for a store filled by other means than its clients, like
// the bench's retained jobs.
func SettleSweep(ctx context.Context, st store.Store) error {
	var ws []store.SettledWindow
	for from := ""; ; {
		res, err := st.JobSweepExpired(ctx, &store.SweepParams{Now: st.Now(), After: from, Scan: sweepWindow})
		if err != nil {
			return fmt.Errorf("settle the sweep: %w", err)
		}
		if s, ok := settledWindow(from, res, time.Now()); ok {
			ws = append(ws, s)
		}
		if res.Next == "" {
			break
		}
		from = res.Next
	}
	if err := st.SweepSettle(ctx, ws); err != nil {
		return fmt.Errorf("settle the sweep: %w", err)
	}
	return nil
}

// idTime is when a UUIDv7 id was drawn; ok is false for any other id.
func idTime(id string) (time.Time, bool) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// startWalk begins a walk of the table: the settled windows are loaded from the store after
// this process gained the leadership (another leader may have saved newer ones).
func (m *maintainer) startWalk(ctx context.Context) error {
	w := &m.sweeping
	w.began = m.e.store.Now()
	if !w.loaded || w.loadedFor != m.gained {
		ws, err := m.e.store.SweepSettled(ctx)
		if err != nil {
			return err
		}
		w.settled, w.loaded, w.loadedFor = ws, true, m.gained // in id order, as the store returns them
	}
	w.settling = make([]store.SettledWindow, 0, len(w.settled))
	return nil
}

// endWalk keeps the settled windows the walk found for the next, and saves them when they
// changed. A failure to save is logged and only costs the next leader the reads.
func (m *maintainer) endWalk(ctx context.Context) {
	w := &m.sweeping
	changed := w.unsaved || !slices.EqualFunc(w.settled, w.settling, func(a, b store.SettledWindow) bool {
		return a.After == b.After && a.Last == b.Last && a.Soonest.Equal(b.Soonest)
	})
	w.settled, w.settling = w.settling, nil
	if !changed {
		return
	}
	err := m.e.store.SweepSettle(ctx, w.settled)
	if w.unsaved = err != nil; w.unsaved {
		m.e.log.Warn("save the sweep's settled windows (saved again after the next walk)", "err", err)
	}
}

// sweepFull is a pass of the full walk: sweepPass windows read, or fewer that took
// sweepPassTime (settled windows skipped are not read). It returns when the next is due: at
// once after a pass that deleted jobs (the maintainer comes back after its other duties),
// after a rest after one that deleted none (sweepIdlePause), and SweepInterval after now once
// the walk reached the end of the table (the next walk starts at the front). The walk goes on
// from where a pass stopped.
func (m *maintainer) sweepFull(ctx context.Context, now time.Time) (next time.Time, err error) {
	w := &m.sweeping
	start := m.e.clock.Now()
	total := 0
	defer m.logSwept(&total)
	for reads := 0; reads < sweepPass && (reads == 0 || m.e.clock.Now().Sub(start) < sweepPassTime); {
		if ctx.Err() != nil || !m.e.leader.leading() {
			return now.Add(m.e.cfg.SweepInterval), nil
		}
		from := w.from
		if from == "" {
			if err := m.startWalk(ctx); err != nil {
				return time.Time{}, err
			}
		}
		res, soon, read, err := m.fullWindow(ctx, from)
		if err != nil {
			return time.Time{}, err
		}
		if read {
			reads++
		}
		total += res.Deleted
		if soon && !w.found {
			// The front: the head walk's laps start here from now on.
			w.found, w.headKnown, w.head, w.lapping, w.headAt = true, true, from, false, now
			w.end = max(w.end, from) // where the laps end stays, unless the front passed it
		}
		if e := store.Earlier(w.earliest, res.Soonest); !e.Equal(w.earliest) {
			w.earliest, w.earliestFrom = e, from
		}
		w.from = res.Next
		if res.Next == "" {
			if !w.found {
				// Nothing expires soon. The head walk's first lap starts at the window of the
				// earliest expiry the walk saw, when it comes: jobs that have just begun to
				// expire are the front, found before the next walk comes round.
				w.headKnown, w.head, w.end, w.lapping = !w.earliest.IsZero(), w.earliestFrom, w.earliestFrom, false
				w.headAt = m.onClock(w.earliest)
			}
			w.found, w.earliest = false, time.Time{}
			m.endWalk(ctx)
			m.mu.Lock()
			m.swept = w.began
			m.mu.Unlock()
			m.pruneStats(ctx)
			return now.Add(m.e.cfg.SweepInterval), nil // the walk is done; the next one starts at the front
		}
	}
	return m.paced(now, start, total), nil
}

// sweepHead is a pass of the head walk (see sweepWindow). A lap starts at the front and
// deletes the expired jobs of each window. Until it pins the front (the first window left
// holding jobs that expire within SweepInterval), the front moves past each window it reads.
// It ends at the first window from where the last lap ended that deleted nothing and either
// holds jobs expiring soon or comes after the front (jobs expire in id order: nothing after
// it is due), or at the end of the table. A lap longer than a pass goes on in the next.
func (m *maintainer) sweepHead(ctx context.Context, now time.Time) (time.Time, error) {
	w := &m.sweeping
	start := m.e.clock.Now()
	total := 0
	defer m.logSwept(&total)
	if !w.lapping {
		w.at, w.pinned, w.soonest, w.dry = w.head, false, time.Time{}, 0
	}
	for range sweepPass {
		if ctx.Err() != nil || !m.e.leader.leading() {
			return now.Add(m.e.cfg.SweepInterval), nil
		}
		res, soon, err := m.window(ctx, w.at)
		if err != nil {
			return time.Time{}, err
		}
		total += res.Deleted
		w.soonest = store.Earlier(w.soonest, res.Soonest)
		pinnedBefore := w.pinned
		if soon {
			w.pinned = true
		} else if !w.pinned && res.Next != "" {
			// Nothing left here expires soon: the front moves on to the next window. (The
			// last window of the table stays the front: new jobs fill it.)
			w.head = res.Next
		}
		if res.Deleted == 0 {
			w.dry++
		} else {
			w.dry = 0
		}
		// Windows before where the last lap ended hold the jobs left behind the front
		// (retried or ended late) and may hold nothing due yet: the lap goes on past them.
		// A lap also ends after sweepPass windows in a row with nothing to delete past the
		// front, wherever the last one ended: a bound on what a lap reads when jobs stopped
		// ending in id order, whatever else holds.
		if res.Next == "" || (res.Deleted == 0 && (soon || pinnedBefore) && (w.at >= w.end || w.dry >= sweepPass)) {
			w.lapping, w.end = false, w.at
			return m.lapRest(now, start, total, w.soonest), nil
		}
		w.at = res.Next
	}
	w.lapping = true
	return m.paced(now, start, total), nil
}

// lapRest is when the head walk's next lap is due after one that ended: when the earliest
// expiry the lap saw comes (soonest, in the store's time) but within SweepInterval of now,
// and in any case no sooner than sweepHeadRest after now, nor, after a lap that deleted
// nothing, than its paced rest.
func (m *maintainer) lapRest(now, start time.Time, total int, soonest time.Time) time.Time {
	next := now.Add(m.e.cfg.SweepInterval)
	if at := m.onClock(soonest); !soonest.IsZero() && at.Before(next) {
		next = at
	}
	rest := min(sweepHeadRest, m.e.cfg.SweepInterval)
	return maxTime(next, m.paced(now, start, total), m.e.clock.Now().Add(rest))
}

// paced is when a walk's next pass is due after one that stopped at sweepPass windows: at once
// (now) when it deleted jobs, else after sweepIdlePause times its length.
func (m *maintainer) paced(now, start time.Time, total int) time.Time {
	if total > 0 {
		return now
	}
	end := m.e.clock.Now()
	return end.Add(sweepIdlePause * end.Sub(start))
}

func (m *maintainer) logSwept(total *int) {
	if *total > 0 {
		m.e.log.Debug("swept expired jobs", "jobs", *total)
	}
}

// onClock is the time on the engine's clock when the store's clock shows t: expiries are the
// store's times, the maintainer's timers the engine's.
func (m *maintainer) onClock(t time.Time) time.Time {
	return m.e.clock.Now().Add(t.Sub(m.e.store.Now()))
}

func maxTime(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// statsPruneEvery is how often the leader deletes the minute stats older than
// hoppertype.StatsRetention: their rows are kept a week, so an hour late is nothing.
const statsPruneEvery = time.Hour

// pruneStats deletes the minute stats older than hoppertype.StatsRetention, after a complete
// walk of the sweep, at most every statsPruneEvery. A failure only delays it to the next walk:
// it must not hold up the duties that matter (rescues, promotion).
func (m *maintainer) pruneStats(ctx context.Context) {
	now := m.e.store.Now()
	if !m.prunedAt.IsZero() && now.Sub(m.prunedAt) < statsPruneEvery {
		return
	}
	n, err := m.e.store.StatsPrune(ctx, now.Add(-hoppertype.StatsRetention))
	if err != nil {
		m.e.log.Warn("prune job stats (retried after the next sweep)", "err", err)
		return
	}
	m.prunedAt = now
	if n > 0 {
		m.e.log.Debug("pruned job stats", "rows", n)
	}
}
