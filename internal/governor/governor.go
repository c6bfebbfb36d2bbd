// Package governor is a worker process's resource governor (contract 15): it samples the
// process's CPU and memory use and holds back new work while either is at or over its
// limit, so a busy process stops pulling jobs instead of slowing down every job it runs.
// Running jobs are never touched: only the start of new claims waits. See
// docs/flow-control.md#resource-governor.
package governor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
)

// DefaultInterval is how often the governor samples by default.
const DefaultInterval = time.Second

// Resume is the fraction of a limit that use must fall under before a holding governor lets
// new work start again: the gap between the two (hysteresis) keeps a process that works near
// its limit from switching on every sample.
const Resume = 0.9

// smoothing is the time constant of the CPU figure's moving average: one busy second moves it
// a third of the way, so a burst does not hold work back but a sustained load does.
const smoothing = 3 * time.Second

// Config configures a Governor. A zero MaxCPU and MaxMemory is no governor at all.
type Config struct {
	// MaxCPU is the CPU use, as a fraction of the CPU available to the process (0.8 is 80 %),
	// at and above which new work waits; 0 is no limit. At most 1.
	MaxCPU float64
	// MaxMemory is the memory use, in bytes, at and above which new work waits; 0 is no limit.
	MaxMemory int64
	// Interval is the time between samples (default DefaultInterval).
	Interval time.Duration
	// Reader reads the process's use (default Detect()).
	Reader Reader
	Clock  clock.Clock  // paces the samples; default the wall clock
	Logger *slog.Logger // default discards
	// Attrs are added to every log line (e.g. "worker", name).
	Attrs []any
}

// Status is what the governor last measured and decided.
type Status struct {
	Holding     bool
	CPU         float64 // smoothed, as a fraction of the CPU available to the process
	Memory      int64   // bytes
	MemoryLimit int64   // bytes available to the process, 0 when unbounded
	Since       time.Time
}

// Governor holds back new work while the process's CPU or memory use is over its limit. A
// nil *Governor never holds and costs nothing; its methods are safe to call. It is safe for
// concurrent use.
type Governor struct {
	cfg   Config
	alpha float64          // weight of a new CPU sample in the moving average
	read  *backoff.Tracker // failed reads

	mu      sync.Mutex
	status  Status
	sampled bool
	changed chan struct{} // closed at the next change of Holding
}

// New returns the governor of cfg, or nil (no error) when cfg sets no limit. It returns an
// error for a limit out of range, and ErrUnsupported when no Reader is given and none can be
// detected.
func New(cfg Config) (*Governor, error) {
	switch {
	case math.IsNaN(cfg.MaxCPU) || cfg.MaxCPU < 0 || cfg.MaxCPU > 1:
		return nil, fmt.Errorf("resource governor: MaxCPU %v is outside 0–1", cfg.MaxCPU)
	case cfg.MaxMemory < 0:
		return nil, fmt.Errorf("resource governor: MaxMemory %d is negative", cfg.MaxMemory)
	case cfg.MaxCPU == 0 && cfg.MaxMemory == 0:
		return nil, nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Reader == nil {
		r, err := Detect()
		if err != nil {
			return nil, err
		}
		cfg.Reader = r
	}
	g := &Governor{cfg: cfg, changed: make(chan struct{}),
		alpha: 1 - math.Exp(-cfg.Interval.Seconds()/smoothing.Seconds()),
		read: backoff.New(backoff.Config{Name: "read resource use", Attrs: cfg.Attrs, Clock: cfg.Clock,
			Logger: cfg.Logger})}
	g.status.Since = cfg.Clock.Now()
	return g, nil
}

// Run samples every Interval until ctx ends. A nil governor returns at once.
func (g *Governor) Run(ctx context.Context) {
	if g == nil {
		return
	}
	for clock.Sleep(ctx, g.cfg.Clock, g.cfg.Interval) {
		g.Sample()
	}
}

// Sample reads the use once and updates the decision (Run calls it every Interval). A read
// that fails lets work start: a governor that cannot measure must not stop a process for
// good. The failure is logged as a loop's outage is (package backoff).
func (g *Governor) Sample() {
	s, err := g.cfg.Reader.Read()
	if err != nil {
		g.read.Fail(err)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.setLocked(false, "cannot read resource use")
		return
	}
	g.read.Succeed()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sampled {
		s.CPU = g.status.CPU + g.alpha*(s.CPU-g.status.CPU)
	} else if g.cfg.MaxMemory > 0 && s.MemoryLimit > 0 && g.cfg.MaxMemory >= s.MemoryLimit {
		g.cfg.Logger.Warn("resource governor: the memory limit is at or above the memory the process may use; "+
			"it may run out of memory before the governor holds", append(append([]any(nil), g.cfg.Attrs...),
			"max_memory", g.cfg.MaxMemory, "memory_limit", s.MemoryLimit)...)
	}
	g.sampled = true
	g.status.CPU, g.status.Memory, g.status.MemoryLimit = s.CPU, s.Memory, s.MemoryLimit
	if g.status.Holding {
		g.setLocked(!g.underLocked(), "")
	} else {
		g.setLocked(g.overLocked(), "")
	}
}

// overLocked reports whether use is at or over a limit.
func (g *Governor) overLocked() bool {
	return (g.cfg.MaxCPU > 0 && g.status.CPU >= g.cfg.MaxCPU) ||
		(g.cfg.MaxMemory > 0 && g.status.Memory >= g.cfg.MaxMemory)
}

// underLocked reports whether use is under Resume of every limit.
func (g *Governor) underLocked() bool {
	return (g.cfg.MaxCPU == 0 || g.status.CPU < Resume*g.cfg.MaxCPU) &&
		(g.cfg.MaxMemory == 0 || float64(g.status.Memory) < Resume*float64(g.cfg.MaxMemory))
}

// setLocked moves to holding, logging the change and waking the waiters when there is one.
func (g *Governor) setLocked(holding bool, why string) {
	if holding == g.status.Holding {
		return
	}
	now := g.cfg.Clock.Now()
	held := now.Sub(g.status.Since)
	g.status.Holding, g.status.Since = holding, now
	close(g.changed)
	g.changed = make(chan struct{})
	attrs := append(append([]any(nil), g.cfg.Attrs...), "cpu", round(g.status.CPU), "memory", g.status.Memory)
	if g.cfg.MaxCPU > 0 {
		attrs = append(attrs, "max_cpu", g.cfg.MaxCPU)
	}
	if g.cfg.MaxMemory > 0 {
		attrs = append(attrs, "max_memory", g.cfg.MaxMemory)
	}
	if holding {
		g.cfg.Logger.Warn("resource governor: holding back new jobs (running jobs go on)", attrs...)
		return
	}
	attrs = append(attrs, "held", held)
	if why != "" {
		attrs = append(attrs, "why", why)
	}
	g.cfg.Logger.Info("resource governor: taking new jobs again", attrs...)
}

func round(f float64) float64 { return math.Round(f*1000) / 1000 }

// Hold returns nil while new work may start, else a channel closed when it may again. A nil
// governor never holds. In a select, a nil channel never fires, so a waiting loop reads:
//
//	held := g.Hold()
//	if held == nil { /* start work */ }
//	select { case <-held: /* open again */ … }
func (g *Governor) Hold() <-chan struct{} {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.status.Holding {
		return nil
	}
	return g.changed
}

// State reports whether the governor holds and returns a channel closed at its next change
// (nil for a nil governor, which never changes).
func (g *Governor) State() (holding bool, changed <-chan struct{}) {
	if g == nil {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status.Holding, g.changed
}

// Status returns the last measurement and decision; the zero Status for a nil governor.
func (g *Governor) Status() Status {
	if g == nil {
		return Status{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status
}

// Limits returns the configured limits (zero for a nil governor).
func (g *Governor) Limits() (maxCPU float64, maxMemory int64) {
	if g == nil {
		return 0, 0
	}
	return g.cfg.MaxCPU, g.cfg.MaxMemory
}
