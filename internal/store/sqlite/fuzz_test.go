package sqlite_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/store/storetest"
)

// FuzzRoundTrip writes any strings through a client and directly into one SQLite store
// (storetest.FuzzRoundTrip says what is checked).
func FuzzRoundTrip(f *testing.F) {
	storetest.FuzzRoundTrip(f, opener)
}
