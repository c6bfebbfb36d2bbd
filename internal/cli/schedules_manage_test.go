package cli

import (
	"context"
	"encoding/json"
	"regexp"
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
		require.Regexp(t, `NAME\s+SPEC\s+TZ\s+KIND\s+QUEUE\s+SOURCE\s+PAUSED\s+LAST_FIRE\s+NEXT_FIRE\n`, res.stdout,
			"headers without spaces, for scripts")
		require.Regexp(t, name+`-nightly\s+30 2 \* \* \*\s+America/New_York\s+report\s+reports\s+api\s+no\s+never\s+\S+T02:30:00-0[45]:00`, res.stdout)
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

// show prints a schedule with its next fire times, and run enqueues its job now without
// moving them, against the database and through a server; a schedule that never fired shows
// no last fire (null in JSON), not the time it was saved.
func TestSchedulesShowAndRunBothWays(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"remote": b.remote, "local": b.run} {
		s := name + "-nightly"
		res := runner(t, "schedules", "add", s, "--cron", "30 2 * * *", "--tz", "America/New_York",
			"--kind", "report", "--queue", "reports", "--args", `{"list":"ops"}`)
		require.Equal(t, ExitOK, res.code, res.stderr)
		raw := lsRaw(t, runner)[s]
		require.Contains(t, raw, "last_fire_at")
		require.Nil(t, raw["last_fire_at"], "never fired: null, not the time it was saved")
		require.Nil(t, raw["last_manual_fire_at"])
		next := raw["next_fire_at"]

		res = runner(t, "schedules", "show", s, "-n", "3")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "Schedule "+s+"\n")
		require.Regexp(t, `timing\s+30 2 \* \* \*\n`, res.stdout)
		require.Regexp(t, `last fire\s+never\n`, res.stdout)
		require.Regexp(t, `last manual run\s+never\n`, res.stdout)
		require.Regexp(t, `Next fire times\n(  \d{4}-\d\d-\d\dT02:30:00-0[45]:00\n){3}$`, res.stdout)
		res = runner(t, "schedules", "show", s, "-n", "4", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var shown struct {
			Name      string   `json:"name"`
			NextFires []string `json:"next_fires"`
			Last      *string  `json:"last_fire_at"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown))
		require.Equal(t, s, shown.Name)
		require.Nil(t, shown.Last)
		require.Len(t, shown.NextFires, 4)
		first, err := time.Parse(time.RFC3339, shown.NextFires[0])
		require.NoError(t, err)
		nextAt, err := time.Parse(time.RFC3339, next.(string))
		require.NoError(t, err)
		require.True(t, first.Equal(nextAt), "the first is the next fire time")
		for i := 1; i < 4; i++ {
			at, err := time.Parse(time.RFC3339, shown.NextFires[i])
			require.NoError(t, err)
			require.Equal(t, "02:30", at.Format("15:04"), "in the schedule's zone")
			prev, _ := time.Parse(time.RFC3339, shown.NextFires[i-1])
			require.Equal(t, prev.AddDate(0, 0, 1).Format("2006-01-02"), at.Format("2006-01-02"), "one a day")
		}

		res = runner(t, "schedules", "run", s)
		require.Equal(t, ExitOK, res.code, res.stderr)
		m := regexp.MustCompile(`^schedule ` + s + ` run: job (\S+) queued\n$`).FindStringSubmatch(res.stdout)
		require.NotNil(t, m, res.stdout)
		jobID := m[1]
		raw = lsRaw(t, runner)[s]
		require.Equal(t, jobID, raw["last_manual_job_id"])
		require.NotNil(t, raw["last_manual_fire_at"])
		require.Nil(t, raw["last_fire_at"], "a manual run is no fire")
		require.Equal(t, next, raw["next_fire_at"], "the next fire time is left alone")
		res = runner(t, "schedules", "show", s)
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Regexp(t, `last manual run\s+\S+ \(job `+jobID+`\)\n`, res.stdout)
		res = runner(t, "jobs", "show", jobID, "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, `"hopper-manual-fire": "true"`)

		res = runner(t, "schedules", "run", s, "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var ran struct {
			Job struct {
				ID    string `json:"id"`
				Queue string `json:"queue"`
			} `json:"job"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &ran))
		require.Equal(t, "reports", ran.Job.Queue)
		require.NotEqual(t, jobID, ran.Job.ID, "each run enqueues a job")

		res = runner(t, "schedules", "add", name+"-cleanup", "--fixed-delay", "5m", "--kind", "cleanup", "--paused")
		require.Equal(t, ExitOK, res.code, res.stderr)
		res = runner(t, "schedules", "show", name+"-cleanup")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Regexp(t, `Next fire times \(paused: [^\n]*\)\n  \S+\n$`, res.stdout, "a fixed delay has one")

		for cmd, want := range map[string]int{"show": ExitNotFound, "run": ExitNotFound} {
			res = runner(t, "schedules", cmd, "nope")
			require.Equal(t, want, res.code, res.stderr)
			require.Contains(t, res.stderr, "schedule nope not found")
		}
		res = runner(t, "schedules", "show", s, "-n", "0")
		require.Equal(t, ExitUsage, res.code, res.stderr)
		res = runner(t, "schedules", "run")
		require.Equal(t, ExitUsage, res.code, res.stderr)
	}
}

// lsRaw is `schedules ls --json` by name, as generic JSON.
func lsRaw(t *testing.T, runner func(t *testing.T, args ...string) result) map[string]map[string]any {
	t.Helper()
	res := runner(t, "schedules", "ls", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		Schedules []map[string]any `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	byName := map[string]map[string]any{}
	for _, s := range out.Schedules {
		byName[s["name"].(string)] = s
	}
	return byName
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
	b := setupEmpty(t)
	res := b.run(t, "schedules", "ls")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "does not exist")
}
