package claim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A simulated process on a simulated store, on simulated time: the store runs one write at a
// time (SQLite's single writer), a claim costs it a fixed part and a part per job, every
// job's outcome costs it a write too, and handlers take jobDur; or (concurrent) claims run
// side by side, each taking its time (PostgreSQL). Queue "flood" holds an endless backlog; queue "trickle" receives a job every
// trickleEvery, or holds an endless backlog too (shares). This is the fairness scenario of
// `hopper bench` (docs/benchmarks.md), without a store and without a clock's noise.

type simConfig struct {
	units              int
	flood, trickle     int // weights
	trickleEvery       time.Duration
	trickleBacklogged  bool
	claimBase, perJob  time.Duration // a claim's cost to the store
	perOutcome, jobDur time.Duration
	run                time.Duration
	aheadLimit         int
	concurrent         bool // claims run side by side (PostgreSQL), not one at a time (SQLite)
}

type simResult struct {
	latencies []time.Duration // trickle jobs: arrival → start
	starts    map[string]int
	maxClaim  int
}

type event struct {
	at   time.Time
	kind int // evClaim, evEnd, evArrive, evTick
	c    claimed
	n    int // jobs of a claim; lane index of an end
	seq  int
}

const (
	evClaim = iota
	evEnd
	evArrive
	evTick
)

type events []*event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if !e[i].at.Equal(e[j].at) {
		return e[i].at.Before(e[j].at)
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(*event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

type sim struct {
	cfg       simConfig
	s         *state[string]
	now       time.Time
	q         events
	seq       int
	storeFree time.Time            // when the store finishes what it was given
	arrivals  map[string]time.Time // trickle job id → arrival
	backlog   []string             // trickle jobs not claimed yet
	ids       int
	rand      *rand.Rand
	res       simResult
}

func (m *sim) push(e *event) {
	m.seq++
	e.seq = m.seq
	heap.Push(&m.q, e)
}

// write books d of the store's time from now and returns when it is done.
func (m *sim) write(d time.Duration) time.Time {
	if m.storeFree.Before(m.now) {
		m.storeFree = m.now
	}
	m.storeFree = m.storeFree.Add(d)
	return m.storeFree
}

func (m *sim) launch(c claimed) {
	asked := c.req.Units + c.req.Ahead
	n := asked
	if c.req.Lane == "trickle" && !m.cfg.trickleBacklogged {
		n = min(asked, len(m.backlog))
	}
	m.res.maxClaim = max(m.res.maxClaim, asked)
	// The claim takes its jobs when the store gets to it.
	cost := m.cfg.claimBase + time.Duration(n)*m.cfg.perJob
	if m.cfg.concurrent { // PostgreSQL: claims do not wait for each other
		m.push(&event{at: m.now.Add(cost), kind: evClaim, c: c, n: n})
		return
	}
	m.push(&event{at: m.write(cost), kind: evClaim, c: c, n: n})
}

func (m *sim) start(name string, jobs []string) error {
	i := slices.IndexFunc(m.s.lanes, func(l *lane[string]) bool { return l.name == name })
	for _, j := range jobs {
		m.res.starts[name]++
		if at, ok := m.arrivals[j]; ok {
			m.res.latencies = append(m.res.latencies, m.now.Sub(at))
		}
		// Handlers take jobDur, ±50 %: jobs started together end one by one.
		d := time.Duration(float64(m.cfg.jobDur) * (0.5 + m.rand.Float64()))
		m.push(&event{at: m.now.Add(d), kind: evEnd, n: i})
	}
	return nil
}

func (m *sim) giveBack(lane string, jobs []string, _ Why) {
	if lane == "trickle" && !m.cfg.trickleBacklogged {
		m.backlog = append(slices.Clone(jobs), m.backlog...)
	}
}

func runSim(t *testing.T, cfg simConfig) simResult {
	t.Helper()
	s, err := newState[string](Config{Units: cfg.units, Batch: 1000, AheadLimit: cfg.aheadLimit,
		Lanes: []LaneConfig{{Name: "flood", Weight: cfg.flood}, {Name: "trickle", Weight: cfg.trickle}}})
	require.NoError(t, err)
	m := &sim{cfg: cfg, s: s, now: t0, storeFree: t0, arrivals: map[string]time.Time{},
		res: simResult{starts: map[string]int{}}, rand: rand.New(rand.NewPCG(1, 2))}
	if !cfg.trickleBacklogged {
		m.push(&event{at: t0.Add(cfg.trickleEvery), kind: evArrive})
	}
	end := t0.Add(cfg.run)
	var tick *event
	for m.now.Before(end) {
		next, _ := s.step(m.now, m)
		if !next.IsZero() && (tick == nil || next.Before(tick.at)) {
			tick = &event{at: next, kind: evTick}
			m.push(tick)
		}
		e := heap.Pop(&m.q).(*event)
		m.now = e.at
		switch e.kind {
		case evClaim:
			s.received(e.c, Result[string]{Jobs: m.take(e.c.req.Lane, e.n)}, m.now, m)
		case evEnd:
			s.lanes[e.n].done.Add(1)
			if !cfg.concurrent {
				m.write(cfg.perOutcome)
			}
		case evArrive:
			m.ids++
			id := fmt.Sprintf("t-%d", m.ids)
			m.arrivals[id], m.backlog = m.now, append(m.backlog, id)
			s.lanes[1].woken.Store(true)
			m.push(&event{at: m.now.Add(cfg.trickleEvery), kind: evArrive})
		case evTick:
			if e == tick {
				tick = nil
			}
		}
	}
	return m.res
}

// take hands a claim of lane its n jobs.
func (m *sim) take(lane string, n int) []string {
	if lane == "trickle" && !m.cfg.trickleBacklogged {
		n = min(n, len(m.backlog)) // another claim may have taken some meanwhile
		jobs := m.backlog[:n:n]
		m.backlog = m.backlog[n:]
		return jobs
	}
	out := make([]string, n)
	for i := range out {
		m.ids++
		out[i] = fmt.Sprintf("%s-%d", lane, m.ids)
	}
	return out
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)*99/100]
}

// The store's costs: a claim 0.5 ms and 80 µs a job, an outcome 50 µs, a handler 50 µs; so
// the store, not the 20 slots, bounds throughput (about 7,700 jobs/s).
var simCosts = simConfig{units: 20, claimBase: 500 * time.Microsecond, perJob: 80 * time.Microsecond,
	perOutcome: 50 * time.Microsecond, jobDur: 50 * time.Microsecond, run: 5 * time.Second, aheadLimit: 1000}

// Contract 14 with claiming ahead: a trickle of jobs in one queue starts promptly beside a
// flood in another (its claims do not wait behind ever larger claims of the flood), and two
// backlogged queues share the starts by weight.
func TestClaimingAheadKeepsFairShare(t *testing.T) {
	t.Parallel()
	t.Run("trickle beside a flood", func(t *testing.T) {
		t.Parallel()
		cfg := simCosts
		cfg.flood, cfg.trickle, cfg.trickleEvery = 1, 1, 10*time.Millisecond
		r := runSim(t, cfg)
		require.Greater(t, r.starts["flood"], 25_000, "the flood runs at the store's pace")
		require.LessOrEqual(t, p99(r.latencies), 10*time.Millisecond, "trickle p99 (of %d)", len(r.latencies))
		require.LessOrEqual(t, r.maxClaim, 40, "no claim larger than a lane's units and its share ahead")
	})
	for _, tc := range []struct {
		w          [2]int
		concurrent bool
	}{{[2]int{1, 1}, false}, {[2]int{3, 1}, false}, {[2]int{1, 1}, true}, {[2]int{3, 1}, true}} {
		w := tc.w
		t.Run(fmt.Sprintf("shares %d:%d concurrent %v", w[0], w[1], tc.concurrent), func(t *testing.T) {
			t.Parallel()
			cfg := simCosts
			cfg.flood, cfg.trickle, cfg.trickleBacklogged, cfg.concurrent = w[0], w[1], true, tc.concurrent
			if tc.concurrent {
				cfg.claimBase, cfg.perJob = 5*time.Millisecond, 50*time.Microsecond
			}
			r := runSim(t, cfg)
			total := r.starts["flood"] + r.starts["trickle"]
			want := float64(w[0]) / float64(w[0]+w[1])
			require.InDelta(t, want, float64(r.starts["flood"])/float64(total), 0.05, "flood's share of %d starts", total)
		})
	}
}
