package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSchedulesPreviewSpringForward(t *testing.T) {
	t.Parallel()
	b := setupEmpty(t)
	res := b.run(t, "schedules", "preview", "--cron", "30 2 * * *", "--tz", "America/New_York",
		"--from", "2026-03-07T00:00:00Z", "-n", "3")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "2026-03-07T02:30:00-05:00\n2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n", res.stdout)
	_, err := os.Stat(b.db)
	require.ErrorIs(t, err, os.ErrNotExist, "preview must not create or open a database")
}

func TestSchedulesPreviewJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "schedules", "preview", "--cron", "30 1 * * *", "--tz", "America/New_York",
		"--from", "2026-10-31T12:00:00-04:00", "-n", "2", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}, got)
}

func TestSchedulesPreviewDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := time.Now()
	res := b.run(t, "schedules", "preview", "--cron", "@every 1m")
	require.Equal(t, ExitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 10)
	first, err := time.Parse(time.RFC3339, lines[0])
	require.NoError(t, err)
	require.True(t, first.After(before.Add(-time.Second)), "--from defaults to now")
	require.True(t, strings.HasSuffix(lines[0], "Z"), "--tz defaults to UTC: %s", lines[0])

	res = b.run(t, "schedules", "preview", "--cron", "@daily", "-n", "1000", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got []string
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Len(t, got, 1000)
}

func TestSchedulesPreviewUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Each names its flag (found by FuzzFlags).
		{[]string{"--cron", "61 * * * *"}, `--cron: invalid schedule: "61 * * * *": minute field "61"`},
		{[]string{"--cron", "* * *"}, "--cron: invalid schedule: \"* * *\" has 3 fields"},
		{[]string{"--cron", "0 0 * * *", "--tz", "Mars/Olympus_Mons"}, `--tz: invalid schedule: unknown time zone "Mars/Olympus_Mons"`},
		{[]string{"--cron", "bad", "--tz", "Local"}, `--tz: invalid schedule: time zone "Local" depends on the machine`},
		{[]string{"--cron", "@every 10ms"}, "--cron: invalid schedule: interval 10ms is shorter than 1s"},
		{[]string{"--cron", "0 0 * * *", "--from", "yesterday"}, `--from "yesterday" is not an RFC 3339 time`},
		{[]string{"--cron", "0 0 * * *", "-n", "0"}, "--count (-n) must be between 1 and 1000"},
		{[]string{"--cron", "0 0 * * *", "-n", "1001"}, "--count (-n) must be between 1 and 1000"},
		{nil, `required flag(s) "cron" not set`},
	} {
		res := b.run(t, append([]string{"schedules", "preview"}, tc.args...)...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", tc.args, res.stderr)
		require.Contains(t, res.stderr, tc.want, tc.args)
		require.Empty(t, res.stdout, tc.args)
	}
}

// A bad zone given to `schedules add` is the zone's fault, not the spec's (found by FuzzFlags).
func TestSchedulesAddNamesABadZone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, timing := range [][]string{{"--cron", "@daily"}, {"--every", "5m"}, {"--fixed-delay", "5m"}} {
		res := b.run(t, append([]string{"schedules", "add", "s", "--kind", "k", "--tz", "Mars/Olympus"}, timing...)...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", timing, res.stderr)
		require.Contains(t, res.stderr, `invalid tz: invalid schedule: unknown time zone "Mars/Olympus"`, timing)
	}
}

func TestSchedulesGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "schedules")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "preview")

	res = b.run(t, "schedules", "frobnicate")
	require.Equal(t, ExitUsage, res.code)
}
