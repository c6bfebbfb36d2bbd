// Package hoppertest helps test programs that use Hopper.
package hoppertest

import (
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
)

// FakeClock is a manual clock for hopper.Config.Clock and sqlitestore.Config.Clock: time moves
// only when Advance is called, and leases, retries, timeouts and schedules due by then fire.
type FakeClock = clock.Fake

// NewFakeClock returns a fake clock set to start.
func NewFakeClock(start time.Time) *FakeClock { return clock.NewFake(start) }
