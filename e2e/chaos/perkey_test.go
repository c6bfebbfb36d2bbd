//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// Scenario: limits per key. Kind chaos is capped at capPerKey running jobs per fairness key,
// fleet-wide; jobs of eight tenants are enqueued while remote workers (stream and poll) are
// SIGKILLed and replaced every few seconds. No acknowledged job is lost, none runs twice
// without a recorded lost attempt, and no tenant ever has more than capPerKey handlers
// running at once: a killed worker's jobs keep their key's slots until they are rescued, so
// a replacement never runs a tenant's job beside the ones the dead worker held.
func TestKillWorkersWithCapsPerKeySQLite(t *testing.T) {
	t.Parallel()
	killWithCapsPerKey(t, 0)
}

// The same with batch workers (up to 5 jobs of a group in one handler call) and grouped jobs:
// workers are SIGKILLed while they hold batches; each job of a killed batch is rescued alone,
// and a batch never takes a tenant past its cap.
func TestKillBatchWorkersWithCapsPerKeySQLite(t *testing.T) {
	t.Parallel()
	killWithCapsPerKey(t, 5)
}

func killWithCapsPerKey(t *testing.T, batch int) {
	const capPerKey, tenants = 2, 8
	h := newHarness(t)
	srv := h.startServer("server", "--database", filepath.Join(h.dir, "hopper.db"))
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	_, err := srv.api.kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: Kind, CapPerKey: ptr(int32(capPerKey))})
	cancel()
	require.NoError(t, err)

	fig := figures(t)
	for i := range 4 {
		h.startWorker(h.nextName("w"), srv.url(), workerOpts{mode: []string{"stream", "poll"}[i%2], batch: batch})
	}
	keyOf := map[string]string{} // job id → its tenant, from the specs the enqueuer sent
	next := func() *hopperv1.JobSpec {
		spec := jobSpec(Args{SleepMS: 100 + rand.N(300)})
		spec.FairnessKey = fmt.Sprintf("tenant-%d", rand.N(tenants))
		if batch > 0 { // a few groups per tenant, so that batches form
			spec.GroupKey = fmt.Sprintf("%s/%d", spec.FairnessKey, rand.N(3))
		}
		return spec
	}
	e := newEnqueuer()
	stopEnqueue := e.start(t.Context(), func() []*api { return []*api{srv.api} }, 10, 150*time.Millisecond, next)
	duration := pick(20*time.Second, 90*time.Second)
	start := time.Now()
	var kills []workerKill
	for time.Since(start) < duration { // real time: the processes run on the wall clock
		sleepJitter(3 * time.Second)
		ws := h.liveWorkers()
		victim := ws[rand.N(len(ws))]
		victim.kill()
		kills = append(kills, workerKill{victim.wname, time.Now()})
		h.startWorker(h.nextName("w"), victim.url, victim.opts)
	}
	stopEnqueue()
	acked := e.ids()
	require.NotEmpty(t, acked)
	h.waitDrained(func() *api { return srv.api }, len(acked), 150*time.Second)
	h.stopWorkers()

	logs := readWorkerLogs(t, h.dir)
	hist, err := srv.api.histories(t.Context())
	require.NoError(t, err)
	for id, jh := range hist {
		keyOf[id] = jh.job.GetFairnessKey()
	}
	v := verifyRuns(acked, hist, logs)
	most, at := mostRunningPerKey(logs, kills, keyOf)
	fig.Jobs = fmt.Sprintf("%d (%d handler runs)", v.Jobs, v.Runs)
	fig.Lost = fmt.Sprint(v.Lost)
	fig.Dups = v.dupText()
	fig.note("cap %d per key over %d tenants: at most %d of a tenant's handlers ran at once (%s); %d worker SIGKILLs in %s",
		capPerKey, tenants, most, at, len(kills), secs(duration))
	v.require(t)
	require.Zero(t, v.Lost, "acknowledged jobs lost")
	require.LessOrEqual(t, most, capPerKey, "handlers of one tenant running at once (%s)", at)
	require.Equal(t, capPerKey, most, "the cap was reached: the scenario loads every tenant")
}

// mostRunningPerKey is the most handlers of one key that ran at once, by the workers' logs,
// and which key and when. A run lasts from its start line to its end line, or to its worker's
// SIGKILL when it has none.
func mostRunningPerKey(logs *workerLogs, kills []workerKill, keyOf map[string]string) (int, string) {
	killed := map[string]int64{}
	for _, k := range kills {
		killed[k.name] = k.at.UnixNano()
	}
	type edge struct {
		t     int64
		delta int
	}
	edges := map[string][]edge{}
	for job, starts := range logs.starts {
		key := keyOf[job]
		if key == "" {
			continue
		}
		for _, s := range starts {
			end, ok := logs.ends[runKey{job, s.Token}]
			stop := end.T
			if !ok {
				if stop, ok = killed[s.Worker]; !ok {
					stop = time.Now().UnixNano() // still running at the end: counted to the end
				}
			}
			edges[key] = append(edges[key], edge{s.T, +1}, edge{stop, -1})
		}
	}
	most, where := 0, "no runs"
	for key, es := range edges {
		sort.Slice(es, func(i, j int) bool { // an end before a start at the same instant
			return es[i].t < es[j].t || es[i].t == es[j].t && es[i].delta < es[j].delta
		})
		n := 0
		for _, e := range es {
			if n += e.delta; n > most {
				most, where = n, fmt.Sprintf("%s at %s", key, time.Unix(0, e.t).Format("15:04:05.000"))
			}
		}
	}
	return most, where
}

func ptr[T any](v T) *T { return &v }
