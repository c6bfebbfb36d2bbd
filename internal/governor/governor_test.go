package governor

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeReader returns the sample the test set, or its error.
type fakeReader struct {
	mu  sync.Mutex
	s   Sample
	err error
}

func (f *fakeReader) set(cpu float64, mem int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.s, f.err = Sample{CPU: cpu, Memory: mem, MemoryLimit: 8 << 30}, nil
}

func (f *fakeReader) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeReader) Read() (Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s, f.err
}

// logs collects log lines.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns how many lines contain s.
func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

type testBundle struct {
	clk *clock.Fake
	r   *fakeReader
	log *logs
	g   *Governor
}

func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	b := &testBundle{clk: clock.NewFake(start), r: &fakeReader{}, log: &logs{}}
	cfg.Clock, cfg.Reader = b.clk, b.r
	cfg.Logger = slog.New(slog.NewTextHandler(b.log, nil))
	g, err := New(cfg)
	require.NoError(t, err)
	require.NotNil(t, g)
	b.g = g
	return b
}

// feed samples cpu and mem n times and returns how often the decision changed.
func (b *testBundle) feed(cpu float64, mem int64, n int) int {
	changes := 0
	for range n {
		before := b.g.Hold() != nil
		b.r.set(cpu, mem)
		b.g.Sample()
		if (b.g.Hold() != nil) != before {
			changes++
		}
	}
	return changes
}

const (
	holdLine = "holding back new jobs"
	openLine = "taking new jobs again"
)

func TestHoldsAtCPULimitAndOpensUnderResume(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxCPU: 0.8})
	require.Zero(t, b.feed(0.5, 0, 5))
	require.Nil(t, b.g.Hold(), "under the limit")

	require.Equal(t, 1, b.feed(0.95, 0, 20), "a sustained load over the limit holds, once")
	held := b.g.Hold()
	require.NotNil(t, held)
	require.InDelta(t, 0.95, b.g.Status().CPU, 0.01)

	require.Zero(t, b.feed(0.75, 0, 50), "under the limit but over 90 % of it: still holding")
	select {
	case <-held:
		t.Fatal("opened above the resume threshold")
	default:
	}

	require.Equal(t, 1, b.feed(0.3, 0, 20), "well under: opens, once")
	require.Nil(t, b.g.Hold())
	select {
	case <-held:
	default:
		t.Fatal("opening did not wake the waiters")
	}
	require.Equal(t, 1, b.log.count(holdLine), "one line per change")
	require.Equal(t, 1, b.log.count(openLine))
}

func TestCPUIsSmoothed(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxCPU: 0.8})
	b.feed(0.2, 0, 10)
	require.Zero(t, b.feed(1, 0, 1), "one busy second is a burst, not a load")
	require.Less(t, b.g.Status().CPU, 0.8)
	require.Equal(t, 1, b.feed(1, 0, 10), "a few busy seconds hold")
}

func TestDoesNotFlapNearTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxCPU: 0.8, MaxMemory: 1000})
	changes := 0
	for i := range 200 {
		cpu, mem := 0.76, int64(960)
		if i%2 == 0 {
			cpu, mem = 0.84, 1010
		}
		changes += b.feed(cpu, mem, 1)
	}
	require.Equal(t, 1, changes, "held once, then stays held while use hovers at the limit")
	require.Equal(t, 1, b.log.count(holdLine))
	require.Zero(t, b.log.count(openLine))
}

func TestHoldsAtMemoryLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxMemory: 1000})
	require.Zero(t, b.feed(1, 999, 3), "CPU has no limit here")
	require.Equal(t, 1, b.feed(0, 1000, 1), "at the limit holds at once: memory is not smoothed")
	require.Zero(t, b.feed(0, 901, 3), "over 90 % of it: still holding")
	require.Equal(t, 1, b.feed(0, 899, 1))
	st := b.g.Status()
	require.False(t, st.Holding)
	require.Equal(t, int64(899), st.Memory)
	require.Equal(t, int64(8<<30), st.MemoryLimit)
	require.Equal(t, 1, b.log.count(holdLine))
	require.Equal(t, 1, b.log.count(openLine))
}

func TestAFailingReaderLetsWorkStart(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxCPU: 0.5})
	b.feed(1, 0, 5)
	require.NotNil(t, b.g.Hold())
	b.r.fail(errors.New("read cpu.stat: permission denied"))
	for range 5 {
		b.g.Sample()
	}
	require.Nil(t, b.g.Hold(), "a governor that cannot measure does not stop the process")
	require.Equal(t, 1, b.log.count("read resource use failed"), "the failure is logged once")
	require.Equal(t, 1, b.log.count("cannot read resource use"))
	b.feed(1, 0, 1)
	require.NotNil(t, b.g.Hold(), "it governs again once it can read")
	require.Equal(t, 1, b.log.count("read resource use recovered"))
}

func TestRunSamplesOnItsClock(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxMemory: 100, Interval: 2 * time.Second})
	b.r.set(0, 500)
	holding, changed := b.g.State()
	require.False(t, holding)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); b.g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitTimer(t, b.clk)
	b.clk.Advance(time.Second)
	require.False(t, b.g.Status().Holding, "no sample before the interval")
	b.clk.Advance(time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the governor did not sample after its interval")
	}
	holding, _ = b.g.State()
	require.True(t, holding)
}

// waitTimer waits until a goroutine waits on clk.
func waitTimer(t *testing.T, clk *clock.Fake) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Pending() > 0 }, 10*time.Second, time.Millisecond)
}

func TestNoLimitIsNoGovernor(t *testing.T) {
	t.Parallel()
	g, err := New(Config{})
	require.NoError(t, err)
	require.Nil(t, g)
	require.Nil(t, g.Hold(), "a nil governor never holds")
	holding, changed := g.State()
	require.False(t, holding)
	require.Nil(t, changed)
	require.Equal(t, Status{}, g.Status())
	g.Run(t.Context()) // returns at once
}

func TestLimitsOutOfRange(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{MaxCPU: -0.1}, {MaxCPU: 1.5}, {MaxMemory: -1}} {
		_, err := New(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

func TestWarnsWhenTheMemoryLimitIsAboveWhatTheProcessMayUse(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxMemory: 16 << 30})
	b.feed(0, 1<<30, 3)
	require.Equal(t, 1, b.log.count("may run out of memory before the governor holds"))
}
