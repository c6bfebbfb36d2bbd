package claim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

// The state machine, driven by hand: each test makes the claim loop's decisions step by step
// at times it chooses, answers its claims itself and checks what the loop did. No store, no
// goroutines.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rec records what the state machine did.
type rec struct {
	claims  []claimed
	started map[string][]string
	order   []string // lanes of the started jobs, in start order
	back    map[string][]string
	why     []Why
	failAt  int // the start call that fails (1-based; 0: none)
	starts  int
}

func (r *rec) launch(c claimed) { r.claims = append(r.claims, c) }
func (r *rec) start(lane string, jobs []string) error {
	r.starts++
	if r.starts == r.failAt {
		return errors.New("worker went away")
	}
	r.started[lane] = append(r.started[lane], jobs...)
	for range jobs {
		r.order = append(r.order, lane)
	}
	return nil
}
func (r *rec) giveBack(lane string, jobs []string, why Why) {
	r.back[lane] = append(r.back[lane], jobs...)
	r.why = append(r.why, why)
}

// machine is a state machine with its recorder and its own time.
type machine struct {
	t     *testing.T
	s     *state[string]
	r     *rec
	now   time.Time
	ids   int
	ended int // jobs churn ended: the oldest running is m.r.order[ended]
}

func newMachine(t *testing.T, cfg Config) *machine {
	t.Helper()
	if cfg.Retry == nil {
		cfg.Retry = backoff.New(backoff.Config{Name: "claim jobs", Clock: clock.NewFake(t0),
			Policy: backoff.WorkPolicy, Rand: func() float64 { return 0.5 }})
	}
	s, err := newState[string](cfg)
	require.NoError(t, err)
	return &machine{t: t, s: s, r: &rec{started: map[string][]string{}, back: map[string][]string{}}, now: t0}
}

// step runs one step at the machine's time and returns the claims it launched.
func (m *machine) step() []claimed {
	before := len(m.r.claims)
	m.s.step(m.now, m.r)
	return m.r.claims[before:]
}

// jobs makes n job ids of lane.
func (m *machine) jobs(lane string, n int) []string {
	out := make([]string, n)
	for i := range out {
		m.ids++
		out[i] = fmt.Sprintf("%s-%d", lane, m.ids)
	}
	return out
}

// answer hands c its result.
func (m *machine) answer(c claimed, r Result[string]) { m.s.received(c, r, m.now, m.r) }

// done ends n started jobs of lane.
func (m *machine) done(lane string, n int) {
	for _, l := range m.s.lanes {
		if l.name == lane {
			l.done.Add(int64(n))
		}
	}
}

func (m *machine) lane(name string) *lane[string] {
	for _, l := range m.s.lanes {
		if l.name == name {
			return l
		}
	}
	m.t.Fatalf("no lane %s", name)
	return nil
}

func one(units, aheadLimit int) Config {
	return Config{Units: units, Lanes: []LaneConfig{{Name: "q"}}, AheadLimit: aheadLimit, Batch: 1000}
}

func TestAWokenLaneClaimsAtOnceForItsFreeUnits(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 100))
	cs := m.step()
	require.Len(t, cs, 1)
	require.Equal(t, Request{Lane: "q", Units: 10, Alone: true}, cs[0].req, "the first claim asks none ahead: nothing ended yet")
	require.Empty(t, m.step(), "every unit is reserved for the claim out")
	m.answer(cs[0], Result[string]{Jobs: m.jobs("q", 4)})
	require.Len(t, m.r.started["q"], 4)
	require.Empty(t, m.step(), "a claim that came back short says the queue is empty: no claim until a wake-up")
	m.s.lanes[0].woken.Store(true)
	cs = m.step()
	require.Len(t, cs, 1)
	require.Equal(t, 6, cs[0].req.Units, "the units the started jobs do not hold")
}

// Claiming ahead: a claim asks, beyond its free units, for the jobs of the lane that ended
// during the last claim's round trip, at most AheadLimit and the lane's share of the units.
// Those wait in claim order and start as units free, before any new claim of the lane.
func TestClaimAheadAsksForTheEndsOfARoundTrip(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 100))
	c := m.step()[0]
	m.answer(c, Result[string]{Jobs: m.jobs("q", 10)}) // full: more work may wait
	m.done("q", 3)
	cs := m.step()
	require.Len(t, cs, 1, "3 free units are over a quarter of 10")
	require.Equal(t, Request{Lane: "q", Units: 3, Ahead: 0, Alone: true}, cs[0].req, "nothing ended during the first claim")
	m.done("q", 5) // during the claim's round trip
	m.answer(cs[0], Result[string]{Jobs: m.jobs("q", 3)})
	require.Equal(t, 5, m.lane("q").aheadN)
	cs = m.step()
	require.Len(t, cs, 1)
	require.Equal(t, Request{Lane: "q", Units: 5, Ahead: 5, Alone: true}, cs[0].req, "5 free units, and 5 ahead for the 5 that ended")

	m.answer(cs[0], Result[string]{Jobs: m.jobs("q", 10)})
	require.Len(t, m.r.started["q"], 18, "the claim's 5 units start the first 5 of its 10 jobs")
	require.Equal(t, 5, m.lane("q").waiting.Len())
	require.Empty(t, m.step(), "no claim while jobs claimed ahead wait")
	m.done("q", 2)
	require.Empty(t, m.step())
	require.Len(t, m.r.started["q"], 20, "freed units start the jobs claimed ahead, oldest first")
	require.Equal(t, []string{"q-19", "q-20"}, m.r.started["q"][18:])
}

// A lane asks ahead for its share of what every lane's units freed during its last claim,
// at most its share of the units: a flooded lane whose claims ran long would otherwise ask
// for ever more, each claim longer than the last, and every other lane's claims would wait
// behind them (SQLite), or it would take more than its weight (PostgreSQL).
func TestClaimAheadIsBoundedByTheLanesShare(t *testing.T) {
	t.Parallel()
	for _, ended := range []int{500, 4} {
		m := newMachine(t, Config{Units: 20, AheadLimit: 1000, Batch: 1000,
			Lanes: []LaneConfig{{Name: "flood", Weight: 3}, {Name: "trickle", Weight: 1}}})
		cs := m.step()
		require.Len(t, cs, 2)
		for _, c := range cs {
			m.answer(c, Result[string]{Jobs: m.jobs(c.req.Lane, c.req.Units)})
		}
		m.done("flood", m.lane("flood").inUse)
		m.done("trickle", m.lane("trickle").inUse)
		cs = m.step()
		require.Len(t, cs, 2)
		m.lane("flood").inUse += ended // as if so many of the flood's jobs started and ended during the claims
		m.done("flood", ended)
		for _, c := range cs {
			m.answer(c, Result[string]{Jobs: m.jobs(c.req.Lane, c.req.Units)})
		}
		if ended == 500 {
			require.Equal(t, 15, m.lane("flood").aheadN, "3/4 of 20 units")
			require.Equal(t, 5, m.lane("trickle").aheadN, "1/4 of 20 units, though none of its jobs ended")
		} else {
			// The 20 units turned over a fifth of a time: each lane asks for its share of that.
			require.Equal(t, 3, m.lane("flood").aheadN, "15 units × 4/20")
			require.Equal(t, 1, m.lane("trickle").aheadN, "5 units × 4/20")
		}
	}
}

func TestJobsClaimedAheadThatWaitTooLongGoBack(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(4, 100))
	m.lane("q").aheadN = 4
	c := m.step()[0]
	require.Equal(t, 4, c.req.Ahead)
	m.answer(c, Result[string]{Jobs: m.jobs("q", 8)})
	require.Equal(t, 4, m.lane("q").waiting.Len())
	m.now = m.now.Add(999 * time.Millisecond)
	m.step()
	require.Empty(t, m.r.back)
	m.now = m.now.Add(time.Millisecond)
	next, _ := m.s.step(m.now, m.r)
	require.Equal(t, []string{"q-5", "q-6", "q-7", "q-8"}, m.r.back["q"], "waited MaxWait (1 s) without a unit")
	require.Equal(t, []Why{Expired}, m.r.why)
	require.Zero(t, m.lane("q").aheadN, "and the next claim asks none ahead")
	require.True(t, next.IsZero(), "nothing left to time")
}

// While the resource governor holds, no claim starts and the jobs claimed ahead go back;
// when it lets go, every lane looks for work at once.
func TestTheGovernorHoldsClaimsAndGivesBackWhatWaits(t *testing.T) {
	t.Parallel()
	held := false
	cfg := one(4, 100)
	cfg.Held = func(time.Time) (bool, time.Time, <-chan struct{}) { return held, time.Time{}, nil }
	m := newMachine(t, cfg)
	m.lane("q").aheadN = 4
	c := m.step()[0]
	held = true
	m.answer(c, Result[string]{Jobs: m.jobs("q", 8)})
	require.Len(t, m.r.started["q"], 4, "a claim's own units start its jobs, held or not")
	m.done("q", 4)
	require.Empty(t, m.step())
	require.Len(t, m.r.back["q"], 4, "jobs claimed ahead go back while the governor holds")
	require.Equal(t, []Why{Governed}, m.r.why)
	m.lane("q").more = false // as after a claim that found the queue empty
	held = false
	cs := m.step()
	require.Len(t, cs, 1, "let go: the lane looks at once, work may have come meanwhile")
	require.True(t, m.lane("q").urgent || cs[0].req.Units == 4)
}

// A busy lane with few units free waits a moment (Coalesce) for more before it claims; a
// wake-up claims at once.
func TestFewFreeUnitsWaitBrieflyForMore(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(100, 0))
	c := m.step()[0]
	m.answer(c, Result[string]{Jobs: m.jobs("q", 100)})
	m.done("q", 1)
	next, _ := m.s.step(m.now, m.r)
	require.Len(t, m.r.claims, 1, "1 free unit of 100: wait for more")
	require.Equal(t, m.now.Add(time.Millisecond), next)
	m.done("q", 30)
	cs := m.step()
	require.Len(t, cs, 1, "31 free units are over a quarter of 100")
	require.Equal(t, 31, cs[0].req.Units)

	m.answer(cs[0], Result[string]{Jobs: m.jobs("q", 31)})
	m.done("q", 2)
	require.Empty(t, m.step())
	m.now = m.now.Add(time.Millisecond)
	cs = m.step()
	require.Len(t, cs, 1, "the coalescing wait is over")
	require.Equal(t, 2, cs[0].req.Units)
	m.answer(cs[0], Result[string]{Jobs: m.jobs("q", 2)})
	m.done("q", 1)
	m.s.lanes[0].woken.Store(true)
	require.Len(t, m.step(), 1, "a wake-up claims at once")
}

// A lane has at most MaxInFlight claims out, the second only while the last came back full.
func TestTwoClaimsInFlightWhileClaimsComeBackFull(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(100, 0))
	c1 := m.step()[0]
	m.answer(c1, Result[string]{Jobs: m.jobs("q", 100)})
	m.done("q", 50)
	c2 := m.step()[0]
	require.True(t, c2.req.Alone)
	m.done("q", 50)
	cs := m.step()
	require.Len(t, cs, 1)
	c3 := cs[0]
	require.False(t, c3.req.Alone, "the second claim out takes what is ready and returns")
	m.done("q", 0)
	require.Empty(t, m.step(), "two out")
	m.answer(c2, Result[string]{Jobs: m.jobs("q", 10)}) // short: the queue ran dry
	require.Len(t, m.r.started["q"], 110)
	m.done("q", 10)
	require.Empty(t, m.step(), "no second claim after a short one")
}

// A failed claim holds the lane's claims back for its backoff, whatever wakes it.
func TestAFailedClaimBacksOff(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 0))
	c := m.step()[0]
	m.answer(c, Result[string]{Err: errors.New("database away")})
	hold := m.lane("q").holdUntil.Sub(m.now)
	require.Equal(t, 100*time.Millisecond, hold, "WorkPolicy's first delay (jitter drawn at its middle)")
	m.s.lanes[0].woken.Store(true)
	next, _ := m.s.step(m.now, m.r)
	require.Len(t, m.r.claims, 1, "a wake-up does not cut the backoff short")
	require.Equal(t, m.now.Add(hold), next)
	m.now = next
	require.Len(t, m.step(), 1, "the backoff is over: claim at once")
}

// A claim made before a wake-up cannot undo it: if it finds the queue empty, the lane still
// looks again.
func TestAWakeUpDuringAClaimIsNotLost(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 0))
	c := m.step()[0]
	m.s.lanes[0].woken.Store(true)
	m.s.absorb()
	m.answer(c, Result[string]{})
	require.Len(t, m.step(), 1)
}

// A queue's rate limit that allows no start before a time holds the lane's claims until then;
// a cap or a kind's limit that held a claim short has the lane look again at RetryAt.
func TestHoldsAndRetriesOfLimits(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 0))
	c := m.step()[0]
	m.answer(c, Result[string]{HoldUntil: m.now.Add(300 * time.Millisecond)})
	m.s.lanes[0].woken.Store(true)
	next, _ := m.s.step(m.now, m.r)
	require.Len(t, m.r.claims, 1, "held by the rate limit, woken or not")
	require.Equal(t, m.now.Add(300*time.Millisecond), next)
	m.now = next
	cs := m.step()
	require.Len(t, cs, 1)
	m.answer(cs[0], Result[string]{Jobs: m.jobs("q", 2), Restricted: true, RetryAt: m.now.Add(50 * time.Millisecond)})
	next, _ = m.s.step(m.now, m.r)
	require.Len(t, m.r.claims, 2, "short under a cap: wait")
	require.Equal(t, m.now.Add(50*time.Millisecond), next)
	m.now = next
	require.Len(t, m.step(), 1, "look again when the cap's retry is due")
}

// When a claim's result comes back later than the claim answered (the clock moved while the
// result was on its way), the lane still looks again, and a hold still ends, at the times the
// claim said: they do not slip by the delay (TestBatchLinger in the engine once had to move
// its clock until the producer looked). A time that passed meanwhile is due at once.
func TestRetryAndHoldTimesDoNotSlip(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 0))
	c := m.step()[0]
	answered := m.now
	m.now = m.now.Add(30 * time.Millisecond) // the result reaches the loop 30 ms later
	m.answer(c, Result[string]{Jobs: m.jobs("q", 2), Restricted: true, RetryAt: answered.Add(50 * time.Millisecond)})
	next, _ := m.s.step(m.now, m.r)
	require.Equal(t, answered.Add(50*time.Millisecond), next, "the look again the claim asked for, not 50 ms after its result came")
	m.now = next
	cs := m.step()
	require.Len(t, cs, 1)

	answered = m.now
	m.now = m.now.Add(time.Second) // later than the claim's look again
	m.answer(cs[0], Result[string]{Restricted: true, RetryAt: answered.Add(50 * time.Millisecond)})
	require.Len(t, m.step(), 1, "the look again is past: at once")

	c = m.r.claims[len(m.r.claims)-1]
	answered = m.now
	m.now = m.now.Add(100 * time.Millisecond)
	m.answer(c, Result[string]{HoldUntil: answered.Add(300 * time.Millisecond)})
	m.lane("q").woken.Store(true)
	next, _ = m.s.step(m.now, m.r)
	require.Equal(t, answered.Add(300*time.Millisecond), next, "held until the time the claim said")
	m.now = next.Add(-time.Nanosecond)
	require.Empty(t, m.step(), "still held")
	m.now = next
	require.Len(t, m.step(), 1, "the hold ended")
}

// Lanes found empty are looked at again every Poll period, without a wake-up.
func TestEmptyLanesArePolled(t *testing.T) {
	t.Parallel()
	cfg := one(10, 0)
	cfg.Poll = func() time.Duration { return time.Second }
	m := newMachine(t, cfg)
	c := m.step()[0]
	m.answer(c, Result[string]{})
	next, _ := m.s.step(m.now, m.r)
	require.Equal(t, t0.Add(time.Second), next)
	m.now = next
	require.Len(t, m.step(), 1)
}

// A claim whose jobs must not start (the worker was held while it ran) gives them back.
func TestAReturnedClaimGivesItsJobsBack(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 0))
	c := m.step()[0]
	m.answer(c, Result[string]{Jobs: m.jobs("q", 3), Return: true})
	require.Empty(t, m.r.started)
	require.Equal(t, []string{"q-1", "q-2", "q-3"}, m.r.back["q"])
	require.Equal(t, []Why{Returned}, m.r.why)
	require.Equal(t, 10, m.s.free)
	require.Empty(t, m.step(), "and waits for a wake-up")
}

// A Start that fails stops the machine: no claim starts after it.
func TestAFailedStartStops(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 0))
	m.r.failAt = 1
	c := m.step()[0]
	m.answer(c, Result[string]{Jobs: m.jobs("q", 10)})
	require.Error(t, m.s.err)
	require.True(t, m.s.stopping)
	m.done("q", 10)
	require.Empty(t, m.step())
}

// Units are shared by weight among the lanes that want them: a lane below its share gets the
// next free unit, and a lane at or over it leaves the others what they are owed; a lane with
// nothing to do is owed nothing.
func TestUnitsAreSharedByWeight(t *testing.T) {
	t.Parallel()
	m := newMachine(t, Config{Units: 8, Lanes: []LaneConfig{{Name: "a", Weight: 3}, {Name: "b", Weight: 1}}})
	m.lane("b").more = false // b has no work yet
	c := m.step()
	require.Len(t, c, 1)
	require.Equal(t, 8, c[0].req.Units, "a alone wants units: it may take every one")
	m.answer(c[0], Result[string]{Jobs: m.jobs("a", 8)})
	m.s.lanes[1].woken.Store(true) // work for b
	require.Empty(t, m.step(), "no unit free")
	m.done("a", 1)
	cs := m.step()
	require.Len(t, cs, 1)
	require.Equal(t, "b", cs[0].req.Lane, "the freed unit goes to b, below its share")
	m.answer(cs[0], Result[string]{Jobs: m.jobs("b", 1)}) // full: b has more work
	m.done("a", 2)
	cs = m.step()
	require.Len(t, cs, 2, "a free unit is a quarter of either lane's share")
	require.Equal(t, Request{Lane: "b", Units: 1, Alone: true}, cs[0].req, "b, below its share (2 of 8), first: one more")
	require.Equal(t, Request{Lane: "a", Units: 1, Alone: true}, cs[1].req, "and a the last")
	m.done("a", 5)
	cs = m.step()
	require.Len(t, cs, 1, "b is at its share")
	require.Equal(t, "a", cs[0].req.Lane)
	require.Equal(t, 5, cs[0].req.Units)
}

// A loop of one lane has no other lane for its claims to hold up or outweigh: it asks ahead
// for what its units freed during its last claim, at most AheadLimit, beyond its own units.
func TestALoneLaneClaimsAheadBeyondItsUnits(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 100))
	c := m.step()[0]
	m.answer(c, Result[string]{Jobs: m.jobs("q", 10)})
	m.done("q", 10)
	c = m.step()[0]
	m.lane("q").inUse += 500 // as if 500 jobs started and ended during the claim
	m.done("q", 500)
	m.answer(c, Result[string]{Jobs: m.jobs("q", c.req.Units)})
	require.Equal(t, 100, m.lane("q").aheadN, "AheadLimit, not the 10 units")
}

// But a fair claim (a queue with fairness keys) took its jobs in turns between the keys, and
// the jobs claimed ahead start in claim order: a lone lane then asks ahead for what ends in the
// store's FairAhead, not in the whole round trip, and at least for its share of the units, so
// that a key's job that comes later waits behind about FairAhead of them. Whether the next
// claim is so bounded follows the last claim's answer.
func TestAFairLaneClaimsAheadForFairAhead(t *testing.T) {
	t.Parallel()
	m := newMachine(t, one(10, 1000))
	const fair = 10 * time.Millisecond
	c := m.step()[0]
	m.answer(c, Result[string]{Jobs: m.jobs("q", 10), FairAhead: fair})
	// A claim that takes took, during which 500 jobs end.
	claimFor := func(took, fairAhead time.Duration) int {
		m.done("q", m.lane("q").inUse)
		c := m.step()[0]
		m.now = m.now.Add(took)
		m.lane("q").inUse += 500
		m.done("q", 500)
		m.answer(c, Result[string]{Jobs: m.jobs("q", c.req.Units+c.req.Ahead), FairAhead: fairAhead})
		return m.lane("q").aheadN
	}
	require.Equal(t, 50, claimFor(100*time.Millisecond, fair), "the ends of 10 ms of the 100: 500/10")
	require.Equal(t, 25, claimFor(100*time.Millisecond, fair/2), "the store's bound")
	require.Equal(t, 10, claimFor(time.Second, fair), "its 10 units, though 5 end in 10 ms")
	require.Equal(t, 500, claimFor(10*time.Millisecond, fair), "a claim within FairAhead: every end")
	require.Equal(t, 500, claimFor(time.Second, 0), "the queue's keys are gone: the whole round trip")
}
