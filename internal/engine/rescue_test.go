package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// A rescue pass that fails a thousand jobs (an outage of a whole fleet, a poison batch) logs
// one line with their count and a few ids, not a line per job; every one of them is still
// handed on as a dead letter. On the old code it logged 1,000 lines.
func TestRescuedLogsOncePerPass(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	var deadLetters atomic.Int32
	e, err := New(Config{Store: struct{ store.Store }{}, WorkerID: "node-1",
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		OnOutcome: func(p *store.FinishParams, err error) {
			if err == nil && p.State == hoppertype.StateFailed {
				deadLetters.Add(1)
			}
		}})
	require.NoError(t, err)

	res := &store.RescueResult{}
	for i := range 2000 {
		state := hoppertype.StateQueued
		if i%2 == 1 {
			state = hoppertype.StateFailed
		}
		res.Add(fmt.Sprintf("job-%04d", i), "kind-"+fmt.Sprint(i%3), "default", state)
	}
	e.rescued(res, "with expired leases", hoppertype.ActorLeader)

	lines := logs.lines(true)
	require.Equal(t, 2, len(lines), "one line for the requeued jobs, one for the failed")
	require.Contains(t, lines[0], `msg="rescued jobs with expired leases" jobs=1000 job_ids="[job-0000 job-0002 job-0004 job-0006 job-0008]"`)
	require.Contains(t, lines[1], "jobs with expired leases failed with worker_lost: ")
	require.Contains(t, lines[1], `jobs=1000 job_ids="[job-0001 job-0003 job-0005 job-0007 job-0009]"`)
	require.Contains(t, lines[0], `kinds="[kind-0 kind-2 kind-1]" queues=[default]`, "the kinds and queues among them")
	require.Equal(t, int32(1000), deadLetters.Load(), "every failed job is a dead letter")
}

// A rescue warning about one job names it: its id, kind and queue, as keys a log search
// can filter on; the rescue is handed to OnRescued with them, and a job out of rescues
// reaches OnOutcome with its kind and queue.
func TestRescuedNamesTheJob(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	var rescued []store.RescuedJob
	var failed []*hoppertype.JobRow
	e, err := New(Config{Store: struct{ store.Store }{}, WorkerID: "node-1",
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		OnRescued: func(jobs []store.RescuedJob) { rescued = append(rescued, jobs...) },
		OnOutcome: func(p *store.FinishParams, err error) {
			require.Equal(t, hoppertype.OutcomeWorkerLost, p.Outcome)
			failed = append(failed, p.Job)
		}})
	require.NoError(t, err)
	res := &store.RescueResult{}
	res.Add("job-1", "send-invoice", "billing", hoppertype.StateQueued)
	res.Add("job-2", "resize", "images", hoppertype.StateFailed)
	e.rescued(res, "with expired leases", hoppertype.ActorLeader)

	lines := logs.lines(true)
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], `msg="rescued jobs with expired leases" job_id=job-1 kind=send-invoice queue=billing`)
	require.Contains(t, lines[1], `job_id=job-2 kind=resize queue=images`)
	require.Equal(t, []store.RescuedJob{{ID: "job-1", Kind: "send-invoice", Queue: "billing", State: hoppertype.StateQueued}}, rescued)
	require.Len(t, failed, 1)
	require.Equal(t, "resize", failed[0].Kind)
	require.Equal(t, "images", failed[0].Queue)
}

// passSpy records the rescue passes the leader asks of the store.
type passSpy struct {
	store.Store
	passes []*store.RescuePassParams
}

func (s *passSpy) JobRescuePass(_ context.Context, p *store.RescuePassParams) (*store.RescuePassResult, error) {
	s.passes = append(s.passes, p)
	return &store.RescuePassResult{}, nil
}

// The leader's rescue of dead nodes names its own node as alive: a leader that was paused
// past NodeTTL (or whose clock jumped) and rescues before its next heartbeat must not take
// back the jobs it is running (the snooze test saw a job run twice that way).
func TestRescueOfDeadNodesSparesTheLeader(t *testing.T) {
	t.Parallel()
	spy := &passSpy{}
	e, err := New(Config{Store: spy, WorkerID: "node-1", Maintenance: true})
	require.NoError(t, err)
	require.NoError(t, e.maint.rescue(t.Context(), time.Now()))
	require.Len(t, spy.passes, 1)
	require.NotNil(t, spy.passes[0].Dead, "the pass rescues dead nodes")
	require.Equal(t, "node-1", spy.passes[0].Dead.Self)
}
