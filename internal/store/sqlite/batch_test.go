package sqlite_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// A batch claim's reads, and the plain claim's group probe, are index ranges, never a scan of the jobs table: a group probe that
// scans makes each claim's cost grow with the table (with 100,000 grouped jobs, a batch run
// went from 11,000 to 1,400 jobs/s).
func TestBatchPlans(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	plans, err := sqlite.BatchPlans(s)
	require.NoError(t, err)
	for name, plan := range plans {
		require.NotContains(t, plan, "SCAN", "%s:\n%s", name, plan)
	}
	require.Contains(t, plans["heads"], "jobs_group")
	require.Contains(t, plans["run"], "jobs_group")
	require.Contains(t, plans["claim"], "jobs_group", "the plain claim's group probe too")
}
