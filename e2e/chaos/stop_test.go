//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// Scenario 3: a worker holding leases is frozen (SIGSTOP) past their expiry, in poll mode and
// in stream mode (its stream stays open: the server keeps no lease alive for it); its jobs are
// rescued and completed by another worker; then it is resumed (SIGCONT). Whatever it sends
// about its old attempts — heartbeats, lease renewals, completions — is refused as stale
// (FAILED_PRECONDITION), and nothing it does changes a job.
func TestStoppedWorkerIsFenced(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"poll", "stream"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			stoppedWorkerIsFenced(t, mode)
		})
	}
}

func stoppedWorkerIsFenced(t *testing.T, mode string) {
	fig := figures(t)
	h := newHarness(t)
	srv := h.startServer("server", "--database", filepath.Join(h.dir, "hopper.db"))
	n := pick(6, 20)
	frozen := h.startWorker("frozen", srv.url(), workerOpts{mode: mode, concurrency: n, lease: 2 * time.Second})

	// Half the jobs heartbeat while they work, half don't: on SIGCONT the first half find
	// out through a heartbeat, the others through their lease renewal or their completion.
	var ids []string
	for i := range n {
		spec := jobSpec(Args{SleepMS: 4000, HeartbeatMS: []int{0, 300}[i%2]})
		res, err := srv.api.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: spec})
		require.NoError(t, err)
		ids = append(ids, res.GetJob().GetId())
	}
	require.True(t, pollUntil(30*time.Second, 50*time.Millisecond, func() bool {
		return len(startsBy(readWorkerLogs(t, h.dir), "frozen")) == n
	}), "the worker to be frozen starts all %d jobs", n)
	frozen.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()

	h.startWorker("rescuer", srv.url(), workerOpts{mode: "stream", concurrency: n})
	var states map[string]string
	done := pollUntil(60*time.Second, 200*time.Millisecond, func() bool {
		states = jobStates(t, srv.api, ids)
		for _, s := range states {
			if s != "completed" {
				return false
			}
		}
		return true
	})
	require.True(t, done, "the frozen worker's jobs are rescued and completed elsewhere within 60 s: %v", states)
	completedAt := time.Now()
	before := snapshot(t, srv.api, ids)

	resumedAt := time.Now() // before the signal: the worker may write at once
	frozen.signal(syscall.SIGCONT)
	// The resumed worker finds out about every attempt: a refused call, or its handler ends.
	require.True(t, pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		logs := readWorkerLogs(t, h.dir)
		for _, id := range ids {
			if !settled(logs, id, resumedAt) {
				return false
			}
		}
		return true
	}), "the resumed worker's handlers end")
	// Stopped, the worker returns once its calls are answered (its handlers' outcomes too):
	// nothing more of it can reach the server.
	ended, err := frozen.stop(10 * time.Second)
	require.True(t, ended, "the resumed worker stops: %v", err)
	after := snapshot(t, srv.api, ids)

	logs := readWorkerLogs(t, h.dir)
	// Calls sent after the resume: refused as stale, or cut short by the worker itself (its
	// handler's context ended as another call was refused); never accepted.
	refused, other, accepted := map[string]int{}, map[string]int{}, 0
	for _, l := range logs.lines {
		if l.Worker != "frozen" || l.Ev != "rpc" || l.T < resumedAt.UnixNano() {
			continue
		}
		switch l.Code {
		case "failed_precondition", "not_found":
			refused[l.Proc]++
		case "ok":
			accepted++
			t.Errorf("the resumed worker's %s of job %s (token %d) was accepted", l.Proc, l.Job, l.Token)
		default:
			other[l.Proc+" "+l.Code]++
		}
	}
	for _, id := range ids {
		require.Equal(t, before[id], after[id], "job %s changed after the frozen worker resumed", id)
	}
	for _, id := range ids {
		checkRescued(t, srv.api, id)
	}
	v := verifyRuns(ids, historiesOf(t, srv.api, ids), logs)
	v.require(t)

	fig.Jobs = fmt.Sprint(n)
	fig.Lost = fmt.Sprint(v.Lost)
	fig.Dups = v.dupText()
	fig.Recovery = fmt.Sprintf("frozen (%s mode) → all completed by the other worker: %s (lease 2 s)", mode, secs(completedAt.Sub(stoppedAt)))
	fig.note("after SIGCONT the frozen worker's calls were refused: %s; not answered: %s; accepted: %d; every job unchanged",
		countsText(refused), countsText(other), accepted)
	require.NotEmpty(t, refused, "the resumed worker tried to report and was refused")
}

// startsBy returns the handler starts worker logged.
func startsBy(logs *workerLogs, worker string) []Line {
	var out []Line
	for _, l := range logs.lines {
		if l.Ev == "start" && l.Worker == worker {
			out = append(out, l)
		}
	}
	return out
}

// settled reports whether the frozen worker's attempt at job id has ended since resumed.
func settled(logs *workerLogs, id string, resumed time.Time) bool {
	for _, l := range logs.lines {
		if l.Worker == "frozen" && l.Job == id && l.Ev == "end" && l.T >= resumed.UnixNano() {
			return true
		}
	}
	return false
}

func jobStates(t *testing.T, a *api, ids []string) map[string]string {
	out := map[string]string{}
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
		res, err := a.jobs.Get(ctx, &hopperv1.GetRequest{Id: id})
		cancel()
		if err == nil {
			out[id] = res.GetJob().GetState()
		}
	}
	return out
}

// snapshot is each job with its history, as text to compare.
func snapshot(t *testing.T, a *api, ids []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range ids {
		job, err := a.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: id})
		require.NoError(t, err)
		ev, err := a.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: id})
		require.NoError(t, err)
		j := proto.Clone(job.GetJob()).(*hopperv1.Job)
		j.Stalled = false // computed at read time
		b, _ := json.Marshal(struct {
			Job    *hopperv1.Job
			Events *hopperv1.EventsResponse
		}{j, ev})
		out[id] = string(b)
	}
	return out
}

// checkRescued requires job id's attempts to be the frozen worker's, lost to an expired lease,
// then the rescuer's, ok, with the rescuer's result.
func checkRescued(t *testing.T, a *api, id string) {
	t.Helper()
	job, err := a.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: id})
	require.NoError(t, err)
	ev, err := a.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: id})
	require.NoError(t, err)
	var got []string
	for _, at := range ev.GetAttempts() {
		got = append(got, at.GetWorkerId()+":"+at.GetOutcome())
	}
	require.Equal(t, []string{"frozen:lease_expired", "rescuer:ok"}, got, "job %s's attempts", id)
	var result struct {
		Worker string `json:"worker"`
		Token  int64  `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(job.GetJob().GetResult()), &result))
	require.Equal(t, "rescuer", result.Worker, "job %s's result", id)
	require.Equal(t, ev.GetAttempts()[1].GetLeaseToken(), result.Token)
}

func historiesOf(t *testing.T, a *api, ids []string) map[string]*jobHistory {
	t.Helper()
	out := map[string]*jobHistory{}
	for _, id := range ids {
		job, err := a.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: id})
		require.NoError(t, err)
		ev, err := a.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: id})
		require.NoError(t, err)
		out[id] = &jobHistory{job: job.GetJob(), attempts: ev.GetAttempts()}
	}
	return out
}

// countsText formats counts as "Complete 3, Heartbeat 2".
func countsText(m map[string]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
