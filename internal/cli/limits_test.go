package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "512MiB": 512 << 20, "2GiB": 2 << 30, "2gib": 2 << 30, "2Gi": 2 << 30,
		"1G": 1e9, "1GB": 1e9, "1.5G": 1.5e9, "100M": 100e6, "64k": 64e3, "64KiB": 64 << 10, "1TiB": 1 << 40,
		"10B": 10, " 3 MiB ": 3 << 20,
	} {
		got, err := parseByteSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "GiB", "-1G", "2XB", "1.2.3G", "two", "1e3", "99999999999TiB"} {
		_, err := parseByteSize(bad)
		require.Error(t, err, bad)
	}
	for n, want := range map[int64]string{0: "0", 2 << 30: "2GiB", 1e9: "1000000000", 1536 << 20: "1536MiB"} {
		b := byteSize(n)
		require.Equal(t, want, b.String())
	}
}

func TestFractionFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"0": 0, "0.8": 0.8, "80%": 0.8, "1": 1, "100%": 1, "12.5%": 0.125} {
		var f fraction
		require.NoError(t, f.Set(in), in)
		require.InDelta(t, want, float64(f), 1e-12, in)
	}
	for _, bad := range []string{"", "1.5", "-0.1", "101%", "NaN", "Inf", "most"} {
		var f fraction
		require.Error(t, f.Set(bad), bad)
	}
}

// serve's governor flags, from the command line or the environment; a bad value is a usage
// error naming the flag (and the variable).
func TestServeGovernorFlags(t *testing.T) {
	t.Parallel()
	cmd := parsed(t, "serve", "--max-cpu", "0.8", "--max-memory", "2GiB")
	require.Equal(t, "0.8", cmd.Flags().Lookup("max-cpu").Value.String())
	require.Equal(t, "2GiB", cmd.Flags().Lookup("max-memory").Value.String())

	cmd = parsed(t, "serve")
	require.NoError(t, flagsFromEnv(cmd, env{"HOPPER_MAX_CPU": "75%", "HOPPER_MAX_MEMORY": "512MiB"}.lookup))
	require.Equal(t, "0.75", cmd.Flags().Lookup("max-cpu").Value.String())
	require.Equal(t, "512MiB", cmd.Flags().Lookup("max-memory").Value.String())

	for name, value := range map[string]string{"HOPPER_MAX_CPU": "1.5", "HOPPER_MAX_MEMORY": "lots"} {
		err := flagsFromEnv(parsed(t, "serve"), env{name: value}.lookup)
		require.Equal(t, ExitUsage, exitCode(err), name)
		require.Contains(t, message(err), name+": ")
		require.Contains(t, message(err), "--"+strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, envPrefix)), "_", "-"))
	}
	for flag, value := range map[string]string{"--max-cpu": "2", "--max-memory": "2XB"} {
		res := runArgs(t, "serve", "--addr", "127.0.0.1:0", flag, value)
		require.Equal(t, ExitUsage, res.code, res.stderr)
		require.Contains(t, res.stderr, flag)
	}
}

func TestQueuesLsShowsAwaitingCompute(t *testing.T) {
	t.Parallel()
	qs := []*hopper.QueueInfo{{Name: "mail", Counts: map[hopper.JobState]int64{hopper.StateQueued: 7, hopper.StateRunning: 2},
		Computing: 2, AwaitingCompute: 7, HeldByGovernor: true}}
	var out strings.Builder
	require.NoError(t, printQueues(&out, qs))
	require.Contains(t, out.String(), "QUEUED_DISABLED")
	require.Contains(t, out.String(), "AWAITING_COMPUTE")
	require.Contains(t, out.String(), "COMPUTING")
	require.Regexp(t, `mail\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+7\s+0\s+2\s+0\s+0\s+0\s+0\s+2\s+7\s+yes\n`, out.String(),
		"waiting, scheduled, queued, then the disabled ones, then the other states, computing, awaiting compute, held")
	raw, err := json.Marshal(queuesJSON(qs))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"computing":2,"awaiting_compute":7,"held_by_governor":true`)
}

// Through a server and from the database alike, `queues ls` shows the queued jobs of a queue
// as awaiting compute and the queue whose only live worker is held by its governor as held,
// and `workers ls` the node that holds.
func TestQueuesLsAwaitingComputeBothWays(t *testing.T) {
	b := startServer(t, false)
	b.enqueue(t, "k", "--queue", "reports")
	require.NoError(t, b.store.NodeHeartbeat(t.Context(), &hopper.Node{ID: "busy", Host: "h", PID: 1, Holding: true,
		Queues: []string{"reports"}, HeldQueues: []string{"reports"}}))
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		res := runner(t, "queues", "ls", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, `"awaiting_compute": 1`, name)
		require.Contains(t, res.stdout, `"held_by_governor": true`, name)
		res = runner(t, "queues", "ls")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Regexp(t, `reports\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+1\s+yes\n`, res.stdout, name)
		res = runner(t, "workers", "ls", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, `"holding": true`, name)
		res = runner(t, "workers", "ls")
		require.Regexp(t, `busy\s+h\s+1\s+.*\s+holding\n`, res.stdout, name)
	}
}
