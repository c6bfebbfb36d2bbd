package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

type scheduleOut struct {
	Name       string          `json:"name"`
	Cron       string          `json:"cron"`
	Every      string          `json:"every"`
	FixedDelay string          `json:"fixed_delay"`
	TZ         string          `json:"tz"`
	Kind       string          `json:"kind"`
	Queue      string          `json:"queue"`
	Args       json.RawMessage `json:"args"`
	CatchUp    string          `json:"catch_up"`
	Overlap    string          `json:"overlap"`
	Jitter     string          `json:"jitter"`
	Paused     bool            `json:"paused"`
	Source     string          `json:"source"`
	NextFireAt string          `json:"next_fire_at"`
}

type schedulesOut struct {
	Schedules []scheduleOut `json:"schedules"`
}

// ls, add, pause, resume and rm work the same against the database and through a server.
func TestSchedulesCommandsBothWays(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"remote": b.remote, "local": b.run} {
		res := runner(t, "schedules", "add", name+"-nightly", "--cron", "30 2 * * *", "--tz", "America/New_York",
			"--kind", "report", "--args", `{"list":"ops"}`, "--queue", "reports", "--catch-up", "all",
			"--overlap", "allow", "--jitter", "1m")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Regexp(t, `^schedule `+name+`-nightly saved \(next fire \d{4}-\d\d-\d\dT02:30:00-0[45]:00\)\n$`, res.stdout)
		res = runner(t, "schedules", "add", name+"-cleanup", "--fixed-delay", "5m", "--kind", "cleanup", "--paused")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Equal(t, "schedule "+name+"-cleanup saved (paused)\n", res.stdout)
		res = runner(t, "schedules", "add", name+"-sync", "--every", "90s", "--kind", "sync")
		require.Equal(t, ExitOK, res.code, res.stderr)

		res = runner(t, "schedules", "ls")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "NAME")
		require.Contains(t, res.stdout, "NEXT_FIRE")
		require.Regexp(t, name+`-nightly\s+30 2 \* \* \*\s+America/New_York\s+report\s+reports\s+api\s+no\s+\S+\s+\S+T02:30:00-0[45]:00`, res.stdout)
		require.Regexp(t, name+`-cleanup\s+fixed-delay 5m0s\s+UTC\s+cleanup\s+default\s+api\s+yes\s+\S+\s+paused`, res.stdout)
		require.Regexp(t, name+`-sync\s+@every 1m30s\s+UTC\s+sync`, res.stdout)

		res = runner(t, "schedules", "pause", name+"-sync")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Equal(t, "schedule "+name+"-sync paused\n", res.stdout)
		got := lsSchedules(t, runner)
		require.True(t, got[name+"-sync"].Paused)
		require.Equal(t, "1m30s", got[name+"-sync"].Every)
		require.JSONEq(t, `{"list":"ops"}`, string(got[name+"-nightly"].Args))
		require.Equal(t, "all", got[name+"-nightly"].CatchUp)
		require.Equal(t, "allow", got[name+"-nightly"].Overlap)
		require.Equal(t, "1m0s", got[name+"-nightly"].Jitter)
		require.Equal(t, "5m0s", got[name+"-cleanup"].FixedDelay)
		require.Equal(t, "api", got[name+"-cleanup"].Source)
		require.NotEmpty(t, got[name+"-cleanup"].NextFireAt)

		res = runner(t, "schedules", "resume", name+"-sync")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.False(t, lsSchedules(t, runner)[name+"-sync"].Paused)

		for _, s := range []string{"nightly", "cleanup", "sync"} {
			res = runner(t, "schedules", "rm", name+"-"+s)
			require.Equal(t, ExitOK, res.code, res.stderr)
			require.Equal(t, "schedule "+name+"-"+s+" removed\n", res.stdout)
		}
		res = runner(t, "schedules", "rm", name+"-sync")
		require.Equal(t, ExitNotFound, res.code, res.stderr)
		res = runner(t, "schedules", "pause", name+"-sync")
		require.Equal(t, ExitNotFound, res.code, res.stderr)
		res = runner(t, "schedules", "ls")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Equal(t, "no schedules\n", res.stdout)

		for _, bad := range [][]string{
			{"--cron", "61 * * * *", "--kind", "k"},
			{"--cron", "@daily", "--tz", "Mars/Base", "--kind", "k"},
			{"--every", "1m", "--fixed-delay", "1m", "--kind", "k"},
			{"--kind", "k"},
			{"--cron", "@daily"},
			{"--cron", "@daily", "--kind", "k", "--args", "{nope"},
			{"--cron", "@daily", "--kind", "k", "--catch-up", "most"},
			{"--cron", "@daily", "--kind", "k", "--overlap", "sometimes"},
		} {
			res = runner(t, append([]string{"schedules", "add", "x"}, bad...)...)
			require.Equal(t, ExitUsage, res.code, "%v: %s", bad, res.stderr)
		}
	}
}

func lsSchedules(t *testing.T, runner func(t *testing.T, args ...string) result) map[string]*scheduleOut {
	t.Helper()
	res := runner(t, "schedules", "ls", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out schedulesOut
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	byName := map[string]*scheduleOut{}
	for i := range out.Schedules {
		byName[out.Schedules[i].Name] = &out.Schedules[i]
	}
	return byName
}

// A schedule a program declares in code is listed with source code and cannot be replaced or
// removed from the CLI (exit code 4); it can be paused.
func TestSchedulesDeclaredInCode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: b.db})
	require.NoError(t, err)
	c, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true,
		Schedules: []hopper.Schedule{{Name: "declared", Cron: "@hourly", Kind: "k"}}})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	stoptest.Within(t, c, 10*time.Second)
	require.NoError(t, st.Close())

	res := b.run(t, "schedules", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `declared\s+@hourly\s+UTC\s+k\s+default\s+code\s+no`, res.stdout)
	res = b.run(t, "schedules", "add", "declared", "--cron", "@daily", "--kind", "k")
	require.Equal(t, ExitConflict, res.code, res.stderr)
	require.Contains(t, res.stderr, "declared in code")
	res = b.run(t, "schedules", "rm", "declared")
	require.Equal(t, ExitConflict, res.code, res.stderr)
	res = b.run(t, "schedules", "pause", "declared")
	require.Equal(t, ExitOK, res.code, res.stderr)
}

func TestSchedulesLsNeedsTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "schedules", "ls")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "does not exist")
}
