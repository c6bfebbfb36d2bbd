package bench

import (
	"os"
	"testing"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
)

// TestMain makes the runs' fresh SQLite stores copies of a migrated template (FreshSQLite).
func TestMain(m *testing.M) {
	FreshSQLite = sqlitetest.Write
	os.Exit(m.Run())
}
