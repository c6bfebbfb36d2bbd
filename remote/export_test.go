package remote

import "github.com/hopperjobs/hopper/internal/clock"

// NewOnClock is New with the worker's waits on clk, for tests that move a fake clock instead
// of sleeping.
func NewOnClock(cfg Config, clk clock.Clock) (*Worker, error) { return newWorker(cfg, clk) }
