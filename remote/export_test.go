package remote

import (
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/governor"
)

// NewOnClock is New with the worker's waits on clk, for tests that move a fake clock instead
// of sleeping.
func NewOnClock(cfg Config, clk clock.Clock) (*Worker, error) { return newWorker(cfg, clk) }

// NewGoverned is New with gov as the worker's resource governor (Config.MaxCPU and MaxMemory
// are ignored), for tests that set what it measures.
func NewGoverned(cfg Config, gov *governor.Governor) (*Worker, error) {
	w, err := newWorker(cfg, clock.Real{})
	if err == nil {
		w.gov = gov
	}
	return w, err
}

// NewOnClockGoverned is NewOnClock with gov as the worker's resource governor (nil: none).
func NewOnClockGoverned(cfg Config, clk clock.Clock, gov *governor.Governor) (*Worker, error) {
	w, err := newWorker(cfg, clk)
	if err == nil && gov != nil {
		w.gov = gov
	}
	return w, err
}

// Stopping reports whether Stop has begun: from then on the worker starts no new job.
func (w *Worker) Stopping() bool { return w.isStopping() }

// Declined is how many jobs a stopping worker in Stream mode keeps, not started, to release
// once its stream is closed: those that waited for a slot when Stop began, and those pushed
// since.
func (w *Worker) Declined() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.declined)
}
