// Package storetest is the conformance suite every Hopper store runs. Store behaviour is tested
// here once, against each implementation, with a fake clock instead of sleeps.
package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// Opener returns a function that opens the store under test on one fresh, empty database.
// Each call of the returned function opens a new handle on that same database (as a restarted
// process would); the suite closes the handles it opens. The database is removed by t.Cleanup.
type Opener func(t testing.TB, clk clock.Clock) func() store.Store

// Start is the fake clock's starting time in every test.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bundle is what each test works with.
type bundle struct {
	store store.Store
	clock *clock.Fake
	open  func() store.Store
}

func setup(t *testing.T, opener Opener) *bundle {
	t.Helper()
	clk := clock.NewFake(Start)
	open := opener(t, clk)
	s := open()
	t.Cleanup(func() { s.Close() })
	return &bundle{store: s, clock: clk, open: open}
}
