package backoff

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
)

// DefaultPolicy is a failing loop's backoff when its Config names none: 100 ms doubling to
// 30 s, ±20 %.
var DefaultPolicy = hoppertype.RetryPolicy{Base: 100 * time.Millisecond, Multiplier: 2, Cap: 30 * time.Second, Jitter: 0.2}

// WorkPolicy is the backoff of the loops on the path of jobs to workers and of their outcomes
// back (claims, outcome writes, a remote worker's stream and polls): 100 ms doubling to 5 s,
// ±20 %. After an outage, work resumes within about 5 s of the store's return; one call every
// 5 s per loop costs a failing database nothing.
var WorkPolicy = hoppertype.RetryPolicy{Base: 100 * time.Millisecond, Multiplier: 2, Cap: 5 * time.Second, Jitter: 0.2}

// RemindEvery is how often a loop that keeps failing says so again.
const RemindEvery = time.Minute

// Config configures a Tracker. Name is required; zero fields take the defaults.
type Config struct {
	// Name says what the loop does, as its log lines start: "promote scheduled jobs".
	Name string
	// Attrs are added to every log line (e.g. "queue", "default").
	Attrs []any
	// Policy spaces the tries; its zero fields take DefaultPolicy's.
	Policy hoppertype.RetryPolicy
	Clock  clock.Clock  // default the wall clock
	Logger *slog.Logger // default discards
	// Rand is the jitter's source of floats in [0, 1) (default math/rand).
	Rand func() float64
}

// Tracker is the outage state of one loop that calls something that may fail (the store, the
// server). The loop reports each try with Fail or Succeed; Fail returns how long to wait
// before the next try: Policy's delay for the number of failures in a row, so an outage costs
// a few calls, not a spin. It logs state changes only: the first failure (Warn, with the
// error and the wait), a reminder at most once a minute while failures go on (Warn, with
// their count), and the recovery (Info, with the count and how long the outage lasted). It is
// safe for concurrent use.
type Tracker struct {
	cfg Config

	mu       sync.Mutex
	failures int
	since    time.Time // first failure of the outage
	reminded time.Time // last log line about the outage
	err      error     // latest failure
}

// New returns the tracker of a loop that has not failed yet.
func New(cfg Config) *Tracker {
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &cfg.Policy
	if p.Base <= 0 {
		p.Base = DefaultPolicy.Base
	}
	if p.Multiplier <= 0 {
		p.Multiplier = DefaultPolicy.Multiplier
	}
	if p.Cap <= 0 {
		p.Cap = DefaultPolicy.Cap
	}
	if p.Jitter == 0 {
		p.Jitter = DefaultPolicy.Jitter
	}
	return &Tracker{cfg: cfg}
}

// Fail records a failed try and returns how long to wait before the next one.
func (t *Tracker) Fail(err error) time.Duration {
	now := t.cfg.Clock.Now()
	t.mu.Lock()
	t.failures++
	n, first := t.failures, t.failures == 1
	if first {
		t.since = now
	}
	since := t.since
	remind := !first && now.Sub(t.reminded) >= RemindEvery
	if first || remind {
		t.reminded = now
	}
	t.err = err
	t.mu.Unlock()

	wait := Delay(t.cfg.Policy, n, t.cfg.Rand)
	switch {
	case first:
		t.cfg.Logger.Warn(t.cfg.Name+" failed; retrying with backoff", t.attrs("err", err, "retry_in", wait)...)
	case remind:
		t.cfg.Logger.Warn(t.cfg.Name+" still failing",
			t.attrs("err", err, "failures", n, "outage", now.Sub(since), "retry_in", wait)...)
	}
	return wait
}

// Succeed records a successful try. After failures it logs the recovery, and the next
// failure waits the shortest delay again.
func (t *Tracker) Succeed() {
	t.mu.Lock()
	n, since := t.failures, t.since
	t.failures, t.err = 0, nil
	t.mu.Unlock()
	if n > 0 {
		t.cfg.Logger.Info(t.cfg.Name+" recovered", t.attrs("failures", n, "outage", t.cfg.Clock.Now().Sub(since))...)
	}
}

// Reset forgets the failures without a log line: the loop stopped calling (a leader's duty
// on a node that no longer leads), so it is not failing any more, nor recovered.
func (t *Tracker) Reset() {
	t.mu.Lock()
	t.failures, t.err = 0, nil
	t.mu.Unlock()
}

// attrs returns Config.Attrs followed by kv, in a new slice (trackers are used concurrently).
func (t *Tracker) attrs(kv ...any) []any {
	return append(append(make([]any, 0, len(t.cfg.Attrs)+len(kv)), t.cfg.Attrs...), kv...)
}

// Status is a loop's outage state.
type Status struct {
	Name     string
	Attrs    []any     // Config.Attrs
	Failures int       // failed tries in a row; 0 when the last try succeeded
	Since    time.Time // when the first of them failed
	Err      error     // the latest failure
}

// Failing reports whether the loop's last try failed.
func (s Status) Failing() bool { return s.Failures > 0 }

// String describes a failing loop in one line: name, attributes, failures, since, error.
func (s Status) String() string {
	if !s.Failing() {
		return s.Brief()
	}
	return fmt.Sprintf("%s: %v", s.Brief(), s.Err)
}

// Brief is String without the error, whose text may name hosts, users or files: for those
// who may know that a loop fails but not why (a public health check).
func (s Status) Brief() string {
	var b strings.Builder
	b.WriteString(s.Name)
	for i := 0; i+1 < len(s.Attrs); i += 2 {
		fmt.Fprintf(&b, " %v=%v", s.Attrs[i], s.Attrs[i+1])
	}
	if !s.Failing() {
		return b.String() + ": ok"
	}
	fmt.Fprintf(&b, ": %d failures since %s", s.Failures, s.Since.UTC().Format(time.RFC3339))
	return b.String()
}

// Status returns the loop's outage state.
func (t *Tracker) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Status{Name: t.cfg.Name, Attrs: t.cfg.Attrs, Failures: t.failures, Since: t.since, Err: t.err}
}

// Set keeps the trackers of a component's loops, to report the failing ones. The zero value is
// ready; it is safe for concurrent use.
type Set struct {
	mu       sync.Mutex
	trackers []*Tracker
}

// New returns a new tracker, kept in the set.
func (s *Set) New(cfg Config) *Tracker {
	t := New(cfg)
	s.mu.Lock()
	s.trackers = append(s.trackers, t)
	s.mu.Unlock()
	return t
}

// Failing returns the state of the set's loops that are failing, in the order they were
// added.
func (s *Set) Failing() []Status {
	s.mu.Lock()
	ts := append([]*Tracker(nil), s.trackers...)
	s.mu.Unlock()
	var out []Status
	for _, t := range ts {
		if st := t.Status(); st.Failing() {
			out = append(out, st)
		}
	}
	return out
}
