//go:build chaos

package chaos

import (
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// fireTimeHeader is the header of a scheduled job that names its fire time.
const fireTimeHeader = "hopper-fire-time"

// Scenario 7: three `hopper serve` nodes on one PostgreSQL schema fire a per-second schedule
// (catch-up all) while the leader is SIGKILLed again and again. Every fire time from the first
// to the last has exactly one job (idempotency key schedule:<name>:<fire µs>): no gap, no
// duplicate.
func TestScheduleLeaderKillsPostgres(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	fig := figures(t)
	schema := pgtest.FreshSchema(t, "hopper_chaos_")
	h := newHarness(t)
	db := []string{"--database", pgtest.URL(), "--schema", schema, "--conns", pgNodeConns}
	nodes := []*server{h.startServer("node-1", db...)}
	for _, name := range []string{"node-2", "node-3"} {
		nodes = append(nodes, h.startServer(name, db...))
	}
	_, err := nodes[0].api.sched.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "tick", Cron: "* * * * * *", Kind: "tick", CatchUp: "all", Overlap: "allow"}})
	require.NoError(t, err)

	var takeovers []time.Duration
	for range pick(1, 4) {
		var leader *server
		require.True(t, pollUntil(60*time.Second, 100*time.Millisecond, func() bool { leader = h.leader(); return leader != nil }),
			"a node leads")
		time.Sleep(3 * time.Second) // real time: it fires for a while, once a second of its wall clock
		leader.kill()
		killed := time.Now()
		time.Sleep(2 * time.Second) // real time: the leader stays dead while the others take over
		leader.restart()
		require.True(t, pollUntil(60*time.Second, 100*time.Millisecond, func() bool { return h.leader() != nil }),
			"a node leads again within 60 s")
		takeovers = append(takeovers, time.Since(killed))
		t.Logf("killed the leader %s; a node leads again after %s", leader.name, secs(time.Since(killed)))
	}
	// The new leader catches up and fires on: until it has fired for a few seconds past the
	// takeover (once a second of the processes' wall clock).
	ledAgain := time.Now()
	require.True(t, pollUntil(60*time.Second, 200*time.Millisecond, func() bool {
		fires, _, _ := fireTimes(t, nodes[0].api)
		return len(fires) > 0 && fires[len(fires)-1].After(ledAgain.Add(4*time.Second))
	}), "the new leader fires on")

	fires, dups, keys := fireTimes(t, nodes[0].api)
	require.NotEmpty(t, fires)
	var gaps []string
	for i := 1; i < len(fires); i++ {
		if d := fires[i].Sub(fires[i-1]); d != time.Second {
			gaps = append(gaps, fmt.Sprintf("%s → %s", fires[i-1].Format(time.TimeOnly), fires[i].Format(time.TimeOnly)))
		}
	}
	fig.Jobs = fmt.Sprintf("%d fire times, %s to %s", len(fires), fires[0].Format(time.TimeOnly), fires[len(fires)-1].Format(time.TimeOnly))
	fig.Lost = fmt.Sprintf("%d gaps", len(gaps))
	fig.Dups = fmt.Sprint(len(dups))
	fig.Recovery = "leader killed → a node leads again: " + durationsText(takeovers)
	fig.note("%d leader SIGKILLs (each node back after 2 s); catch-up all; bad idempotency keys: %d", len(takeovers), keys)
	require.Empty(t, dups, "fire times with more than one job")
	require.Empty(t, gaps, "fire times missing between the first and the last")
	require.Zero(t, keys, "jobs whose idempotency key is not schedule:tick:<fire µs>")
}

// fireTimes returns the fire times of the tick jobs, oldest first and each once; the fire
// times found on more than one job; and how many jobs had an idempotency key that does not
// name their fire time.
func fireTimes(t *testing.T, a *api) (fires []time.Time, dups []time.Time, badKeys int) {
	t.Helper()
	jobs, err := a.allJobs(t.Context())
	require.NoError(t, err)
	seen := map[time.Time]int{}
	for _, j := range jobs {
		if j.GetKind() != "tick" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, j.GetHeaders()[fireTimeHeader])
		require.NoError(t, err, "job %s's fire time header", j.GetId())
		if j.GetIdempotencyKey() != "schedule:tick:"+strconv.FormatInt(at.UnixMicro(), 10) {
			badKeys++
		}
		if seen[at]++; seen[at] == 2 {
			dups = append(dups, at)
		}
	}
	for at := range seen {
		fires = append(fires, at)
	}
	sort.Slice(fires, func(i, j int) bool { return fires[i].Before(fires[j]) })
	return fires, dups, badKeys
}
