package postgres_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/store/storetest"
)

// FuzzRoundTrip writes any strings through a client and directly into one PostgreSQL schema
// (storetest.FuzzRoundTrip says what is checked). Without the test database it skips, or
// fails under CI=true.
func FuzzRoundTrip(f *testing.F) {
	requireDatabase(f)
	storetest.FuzzRoundTrip(f, opener)
}
