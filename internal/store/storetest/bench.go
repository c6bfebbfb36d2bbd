package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Bench runs the store microbenchmarks against the store opener returns, on the wall clock:
// InsertBatch100 (ns/op per 100 jobs), ClaimEmpty (an idle poll), Claim50 (the claim alone of
// 50 queued jobs, one durable commit), Claim50OtherKindDisabled (the same by a claim of any
// kind while another kind is disabled), ClaimComplete50 (claim 50 jobs and complete them:
// two durable commits; ns/op per 50 jobs), InsertWorkflows55 (5 fan-ins of 10 parents and a
// child, in one call: ns/op per 55 jobs) and ClaimCompleteParents50 (claim the 50 parents of
// 5 such fan-ins and complete them, releasing the children, as the engine does: ns/op per 50
// parents), and Complete50 and CompleteParents50, the completions alone (one durable commit)
// of 50 plain jobs and of those 50 parents, whose difference is what a release costs.
func Bench(b *testing.B, opener Opener) {
	b.Run("InsertBatch100", func(b *testing.B) {
		s := openBench(b, opener)
		for b.Loop() {
			benchInsert(b, s, 100)
		}
	})
	b.Run("ClaimEmpty", func(b *testing.B) {
		s := openBench(b, opener)
		for b.Loop() {
			_, _, err := s.JobClaim(b.Context(), benchClaim())
			require.NoError(b, err)
		}
	})
	b.Run("Claim50", func(b *testing.B) { benchClaim50(b, openBench(b, opener), benchClaim()) })
	b.Run("Claim50OtherKindDisabled", func(b *testing.B) {
		s := openBench(b, opener)
		require.NoError(b, s.KindSetDisabled(b.Context(), "other", true))
		p := benchClaim()
		p.Kinds = nil // any kind: the disabled one applies to the claim
		benchClaim50(b, s, p)
	})
	b.Run("InsertWorkflows55", func(b *testing.B) {
		s := openBench(b, opener)
		for b.Loop() {
			benchInsertFanIns(b, s, 5, 10)
		}
	})
	b.Run("InsertWorkflow11", func(b *testing.B) {
		s := openBench(b, opener)
		for b.Loop() {
			benchInsertWorkflow(b, s, 10)
		}
	})
	b.Run("ClaimCompleteParents50", func(b *testing.B) { benchClaimCompleteParents50(b, openBench(b, opener)) })
	b.Run("Complete50", func(b *testing.B) { benchComplete50(b, openBench(b, opener), false) })
	b.Run("CompleteParents50", func(b *testing.B) { benchComplete50(b, openBench(b, opener), true) })
	b.Run("ClaimComplete50", func(b *testing.B) {
		s := openBench(b, opener)
		for b.Loop() {
			b.StopTimer()
			benchInsert(b, s, 50)
			b.StartTimer()
			jobs, _, err := s.JobClaim(b.Context(), benchClaim())
			require.NoError(b, err)
			benchComplete(b, s, jobs)
		}
	})
}

// benchClaim50 times claims of 50 queued jobs; the inserts before and completions after are
// untimed.
func benchClaim50(b *testing.B, s store.Store, p *store.ClaimParams) {
	for b.Loop() {
		b.StopTimer()
		benchInsert(b, s, 50)
		b.StartTimer()
		jobs, _, err := s.JobClaim(b.Context(), p)
		require.NoError(b, err)
		b.StopTimer()
		require.Len(b, jobs, 50)
		benchComplete(b, s, jobs)
		b.StartTimer()
	}
}

// benchComplete completes the claimed jobs.
func benchComplete(b *testing.B, s store.Store, jobs []*hoppertype.JobRow) {
	b.Helper()
	fin := make([]*store.FinishParams, len(jobs))
	for i, j := range jobs {
		fin[i] = &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
			Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker}
	}
	_, err := s.JobFinishMany(b.Context(), fin)
	require.NoError(b, err)
}

func openBench(b *testing.B, opener Opener) store.Store {
	b.Helper()
	s := opener(b, clock.Real{})()
	b.Cleanup(func() { s.Close() })
	return s
}

func benchClaim() *store.ClaimParams {
	return &store.ClaimParams{Queue: defaultQueue, Kinds: []string{"noop"}, Limit: 50, WorkerID: workerA, LeaseDuration: time.Minute}
}

func benchInsert(b *testing.B, s store.Store, n int) {
	b.Helper()
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: defaultQueue,
			Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI}
	}
	_, err := s.JobInsertMany(b.Context(), ps)
	require.NoError(b, err)
}

// benchFanInKind is the kind of the children of benchInsertFanIns.
const benchFanInKind = "noop-fan-in"

// benchInsertFanIns inserts n fan-ins of width parents and a child that waits for them, in one
// call.
func benchInsertFanIns(b *testing.B, s store.Store, n, width int) {
	b.Helper()
	ps := make([]*store.InsertParams, 0, n*(width+1))
	for range n {
		after := make([]string, width)
		for i := range after {
			ps = append(ps, benchJob("noop"))
			after[i] = ps[len(ps)-1].ID
		}
		child := benchJob(benchFanInKind)
		child.After = after
		ps = append(ps, child)
	}
	res, err := s.JobInsertMany(b.Context(), ps)
	require.NoError(b, err)
	require.Equal(b, hoppertype.StateWaiting, res[width].Job.State)
}

// benchJob is a new job of kind in the default queue, as the benchmarks' fan-ins insert them.
func benchJob(kind string) *store.InsertParams {
	return &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: kind, Queue: defaultQueue,
		Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI}
}

// benchInsertWorkflow inserts one workflow (WorkflowInsert, as Client.EnqueueWorkflow) of
// width steps and a fan-in step after them: the workflow benchmark's shape.
func benchInsertWorkflow(b *testing.B, s store.Store, width int) {
	b.Helper()
	p := &store.WorkflowInsertParams{ID: uuid.Must(uuid.NewV7()).String(), Name: "bench"}
	after := make([]string, width)
	for i := range after {
		step := benchJob("noop")
		step.WorkflowID, step.Step, after[i] = p.ID, fmt.Sprintf("s%d", i), step.ID
		p.Steps = append(p.Steps, step)
	}
	fanIn := benchJob(benchFanInKind)
	fanIn.WorkflowID, fanIn.Step, fanIn.After = p.ID, "fan-in", after
	p.Steps = append(p.Steps, fanIn)
	res, err := s.WorkflowInsert(b.Context(), p)
	require.NoError(b, err)
	require.Equal(b, hoppertype.StateWaiting, res.Jobs[width].State)
	require.Equal(b, width+1, res.Workflow.Steps)
}

// benchClaimCompleteParents50 times the claim and completion of the 50 parents of 5 fan-ins,
// each completion with its claimed row (as the engine's); the inserts before and the children
// worked after are untimed.
func benchClaimCompleteParents50(b *testing.B, s store.Store) {
	children := benchClaim()
	children.Kinds = []string{benchFanInKind}
	for b.Loop() {
		b.StopTimer()
		benchInsertFanIns(b, s, 5, 10)
		b.StartTimer()
		jobs, _, err := s.JobClaim(b.Context(), benchClaim())
		require.NoError(b, err)
		fin := make([]*store.FinishParams, len(jobs))
		for i, j := range jobs {
			fin[i] = &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
				Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker, Job: j}
		}
		_, err = s.JobFinishMany(b.Context(), fin)
		require.NoError(b, err)
		b.StopTimer()
		require.Len(b, jobs, 50)
		kids, _, err := s.JobClaim(b.Context(), children)
		require.NoError(b, err)
		require.Len(b, kids, 5)
		benchComplete(b, s, kids)
		b.StartTimer()
	}
}

// benchComplete50 times the completion alone, with the claimed rows (as the engine's), of 50
// claimed jobs: plain ones, or the parents of 5 fan-ins of 10, whose completion releases the
// fan-in children. The inserts and claims before, and the children worked after, are untimed.
func benchComplete50(b *testing.B, s store.Store, parents bool) {
	children := benchClaim()
	children.Kinds = []string{benchFanInKind}
	for b.Loop() {
		b.StopTimer()
		if parents {
			benchInsertFanIns(b, s, 5, 10)
		} else {
			benchInsert(b, s, 50)
		}
		jobs, _, err := s.JobClaim(b.Context(), benchClaim())
		require.NoError(b, err)
		require.Len(b, jobs, 50)
		fin := make([]*store.FinishParams, len(jobs))
		for i, j := range jobs {
			fin[i] = &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
				Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker, Job: j}
		}
		b.StartTimer()
		errs, err := s.JobFinishMany(b.Context(), fin)
		b.StopTimer()
		require.NoError(b, err)
		for _, err := range errs {
			require.NoError(b, err)
		}
		if parents {
			kids, _, err := s.JobClaim(b.Context(), children)
			require.NoError(b, err)
			require.Len(b, kids, 5)
			benchComplete(b, s, kids)
		}
		b.StartTimer()
	}
}
