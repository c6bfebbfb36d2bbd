package claim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chanDriver answers each claim with what the test sends, and reports starts and give-backs.
type chanDriver struct {
	asked    chan Request
	answers  chan Result[string]
	started  chan []string
	back     chan []string
	startErr error
	mu       sync.Mutex
}

func newChanDriver() *chanDriver {
	return &chanDriver{asked: make(chan Request, 8), answers: make(chan Result[string], 8),
		started: make(chan []string, 8), back: make(chan []string, 8)}
}

func (d *chanDriver) Claim(_ context.Context, r Request) Result[string] {
	d.asked <- r
	return <-d.answers
}

func (d *chanDriver) Start(_ string, jobs []string) error {
	d.started <- jobs
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.startErr
}

func (d *chanDriver) GiveBack(_ string, jobs []string, _ Why) { d.back <- jobs }

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no " + what)
		var zero T
		return zero
	}
}

// Run claims for free units, starts the jobs, claims again when Done frees units, and on its
// context's end waits for the claim out, starts its jobs on their units and gives back the
// jobs that wait.
func TestRunClaimsStartsAndDrainsOnStop(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	d := newChanDriver()
	lp, err := New(Config{Clock: clk, Units: 2, Batch: 10, AheadLimit: 10, MaxInFlight: 1, Lanes: []LaneConfig{{Name: "q"}}}, d)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- lp.Run(ctx) }()

	require.Equal(t, Request{Lane: "q", Units: 2, Alone: true}, recv(t, d.asked, "first claim"))
	d.answers <- Result[string]{Jobs: []string{"a", "b"}}
	require.Equal(t, []string{"a", "b"}, recv(t, d.started, "start"))
	lp.Lane("q").Done(1)
	require.Equal(t, 1, recv(t, d.asked, "claim after Done").Units)
	lp.Lane("q").Done(1) // ends during the claim: the next asks one ahead
	d.answers <- Result[string]{Jobs: []string{"c"}}
	require.Equal(t, []string{"c"}, recv(t, d.started, "start"))
	r := recv(t, d.asked, "claim with one ahead")
	require.Equal(t, Request{Lane: "q", Units: 1, Ahead: 1, Alone: true}, r)

	cancel() // stop while the claim is out
	d.answers <- Result[string]{Jobs: []string{"d", "e"}}
	require.Equal(t, []string{"d"}, recv(t, d.started, "the claim's unit starts its job"))
	require.Equal(t, []string{"e"}, recv(t, d.back, "the job claimed ahead goes back"))
	require.NoError(t, recv(t, done, "Run's end"))
}

// A Start that fails stops Run, which returns the error.
func TestRunStopsWhenStartFails(t *testing.T) {
	t.Parallel()
	d := newChanDriver()
	d.startErr = errors.New("worker went away")
	lp, err := New(Config{Clock: clock.NewFake(t0), Units: 2, Lanes: []LaneConfig{{Name: "q"}}}, d)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- lp.Run(t.Context()) }()
	recv(t, d.asked, "claim")
	d.answers <- Result[string]{Jobs: []string{"a"}}
	recv(t, d.started, "start")
	require.ErrorContains(t, recv(t, done, "Run's end"), "worker went away")
}

// Wake makes a lane found empty claim again; the poll does too, on the loop's clock.
func TestRunWakesAndPolls(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	d := newChanDriver()
	lp, err := New(Config{Clock: clk, Units: 2, Lanes: []LaneConfig{{Name: "q"}},
		Poll: func() time.Duration { return time.Minute }}, d)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- lp.Run(ctx) }()
	recv(t, d.asked, "claim")
	d.answers <- Result[string]{} // empty
	lp.Wake("q")
	recv(t, d.asked, "claim after a wake-up")
	d.answers <- Result[string]{}
	require.Eventually(t, func() bool { return clk.Pending() == 1 }, 10*time.Second, time.Millisecond, "the poll's timer")
	clk.Advance(time.Minute)
	recv(t, d.asked, "claim at the poll")
	cancel()
	d.answers <- Result[string]{}
	require.NoError(t, recv(t, done, "Run's end"))
}

func TestNewRefusesABadConfig(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Units: 0, Lanes: []LaneConfig{{Name: "q"}}}, newChanDriver())
	require.ErrorContains(t, err, "Units")
	_, err = New(Config{Units: 1}, newChanDriver())
	require.ErrorContains(t, err, "Lanes")
	_, err = New(Config{Units: 1, Lanes: []LaneConfig{{Name: "q"}, {Name: "q"}}}, newChanDriver())
	require.ErrorContains(t, err, "twice")
}

// Jobs offered to a loop start on its free units, wait for units like jobs claimed ahead
// while there are none, go back when none frees within MaxWait, and are refused once Run
// stops or for a lane it does not have.
func TestOfferStartsOnFreeUnitsAndGoesBackWhenNoneFrees(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	d := newChanDriver()
	lp, err := New(Config{Clock: clk, Units: 1, MaxWait: time.Minute, Lanes: []LaneConfig{{Name: "q"}}}, d)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- lp.Run(ctx) }()
	recv(t, d.asked, "first claim")
	d.answers <- Result[string]{} // the queue is empty

	require.False(t, lp.Offer("other", []string{"x"}), "no such lane")
	require.True(t, lp.Offer("q", []string{"a", "b"}))
	require.Equal(t, []string{"a"}, recv(t, d.started, "the offered job starts on the free unit"))
	require.Eventually(t, func() bool { return clk.Pending() == 1 }, 10*time.Second, time.Millisecond, "b waits for a unit")
	clk.Advance(time.Minute)
	require.Equal(t, []string{"b"}, recv(t, d.back, "b goes back: no unit freed within MaxWait"))

	cancel()
	require.NoError(t, recv(t, done, "Run's end"))
	require.False(t, lp.Offer("q", []string{"c"}), "refused once Run stopped")
}
