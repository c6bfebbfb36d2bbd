package claim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// churn runs the machine for n job ends: each time the oldest running job ends, the machine
// steps (and again after the coalescing wait), and every claim takes the jobs it asked for
// from the lanes in backlog (the others' claims find none).
func (m *machine) churn(n int, backlog map[string]bool) {
	m.t.Helper()
	for range n {
		for _, c := range append(m.step(), m.later()...) {
			jobs := []string(nil)
			if backlog[c.req.Lane] {
				jobs = m.jobs(c.req.Lane, c.req.Units+c.req.Ahead)
			}
			m.answer(c, Result[string]{Jobs: jobs})
		}
		if m.ended < len(m.r.order) {
			m.done(m.r.order[m.ended], 1)
			m.ended++
		}
	}
}

// later steps again once a coalescing wait is over.
func (m *machine) later() []claimed {
	m.now = m.now.Add(time.Millisecond)
	return m.step()
}

// held is how many units lane holds: running jobs and claims out.
func (m *machine) held(lane string) int { return m.lane(lane).share.Held }

// A lane that holds every unit gives them up, as its jobs end, to a lane that wakes up with
// work, until each holds its weighted share; a lane that runs dry is owed nothing, and the
// other takes its units back.
func TestAFloodedLaneGivesWayToAnotherByWeight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flood, trickle int // weights
		want           int // units the trickle lane ends up holding, of 20
	}{{1, 1, 10}, {3, 1, 5}, {1, 3, 15}} {
		m := newMachine(t, Config{Units: 20, Batch: 1000,
			Lanes: []LaneConfig{{Name: "flood", Weight: tc.flood}, {Name: "trickle", Weight: tc.trickle}}})
		m.lane("trickle").more = false
		m.churn(1, map[string]bool{"flood": true})
		require.Equal(t, 20, m.held("flood"), "alone, a lane takes every unit")
		m.lane("trickle").woken.Store(true)
		m.churn(400, map[string]bool{"flood": true, "trickle": true})
		require.Equal(t, tc.want, m.held("trickle"), "weights %d:%d", tc.flood, tc.trickle)
		require.Equal(t, 20-tc.want, m.held("flood"), "a freed unit never stays free while a lane wants it")

		m.churn(100, map[string]bool{"flood": true}) // trickle runs dry
		require.Zero(t, m.held("trickle"))
		require.Equal(t, 20, m.held("flood"))
	}
}

// A lane's share stays within its own bound (a queue's concurrency): a lane owed more than it
// may hold leaves the rest to the others.
func TestAShareIsBoundedByTheLanesMax(t *testing.T) {
	t.Parallel()
	m := newMachine(t, Config{Units: 20, Batch: 1000,
		Lanes: []LaneConfig{{Name: "big"}, {Name: "small", Max: 4, Weight: 10}}})
	m.churn(200, map[string]bool{"big": true, "small": true})
	require.Equal(t, 4, m.held("small"), "small holds its bound, 4, not its weighted share, 18")
	require.Equal(t, 16, m.held("big"))
}

// A loop with fewer units than its backlogged lanes' shares need (one unit, weights 3:1)
// still gives each lane its turn by weight over time: the light lane is not starved.
func TestOneUnitIsSharedByWeightOverTime(t *testing.T) {
	t.Parallel()
	m := newMachine(t, Config{Units: 1, Batch: 1000,
		Lanes: []LaneConfig{{Name: "heavy", Weight: 3}, {Name: "light", Weight: 1}}})
	m.churn(400, map[string]bool{"heavy": true, "light": true})
	require.InDelta(t, 300, len(m.r.started["heavy"]), 30, "heavy")
	require.InDelta(t, 100, len(m.r.started["light"]), 10, "light")
}
