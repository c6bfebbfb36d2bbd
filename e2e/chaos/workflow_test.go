//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// flowParams shape a workflow scenario.
type flowParams struct {
	workflows  int           // acknowledged workflows to enqueue
	enqueueFor time.Duration // over about this long
	kills      killParams
}

// flowShape is the short or full variant of a workflow scenario. The short one deals one
// worker and one server SIGKILL at once, 6–10 s in, while the workflows are enqueued over
// 12 s: a worker killed beside its server has its jobs rescued only once the restarted leader's
// grace has passed (about 15 s), which is most of the scenario's time.
func flowShape(workers int, restartAfter time.Duration) flowParams {
	return flowParams{workflows: pick(50, 500), enqueueFor: pick(12*time.Second, 60*time.Second),
		kills: killParams{duration: pick(6*time.Second, 60*time.Second), workers: workers,
			workerKillEvery: pick(8*time.Second, 3*time.Second), serverKills: pick(1, 3), restartAfter: restartAfter}}
}

// Scenario 8: workflows of fan-out and fan-in (docs/workflows.md) enqueued through `hopper
// serve` on a SQLite file while remote workers and the server are SIGKILLed and restarted.
func TestWorkflowKillsSQLite(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.startServer("server", "--database", filepath.Join(h.dir, "hopper.db"))
	runWorkflowKills(t, h, []*server{srv}, flowShape(4, time.Second))
}

// The same with three `hopper serve` nodes on one PostgreSQL schema, workers spread over them;
// nodes are SIGKILLed too, the leader first.
func TestWorkflowKillsPostgres(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	schema := pgtest.FreshSchema(t, "hopper_chaos_")
	h := newHarness(t)
	db := []string{"--database", pgtest.URL(), "--schema", schema, "--conns", pgNodeConns}
	nodes := []*server{h.startServer("node-1", db...)} // migrates the schema
	for _, name := range []string{"node-2", "node-3"} {
		nodes = append(nodes, h.startServer(name, db...))
	}
	runWorkflowKills(t, h, nodes, flowShape(6, 2*time.Second))
}

// Step names of a fan-out/fan-in workflow: root, then part-0…part-N-1 after it, then gather
// after every part.
const (
	rootStep   = "root"
	gatherStep = "gather"
	partPrefix = "part-"
)

// fanInWorkflow is a workflow of a root step, 5–10 parts after it and a fan-in step (gather)
// after every part, which completes with the parents' results it read (Args.FanIn).
func fanInWorkflow() *hopperv1.EnqueueWorkflowRequest {
	steps := []*hopperv1.WorkflowStep{{Name: rootStep, Job: jobSpec(Args{SleepMS: 20 + rand.N(80)})}}
	var parts []string
	for i := range 5 + rand.N(6) {
		spec := jobSpec(Args{SleepMS: 50 + rand.N(250)})
		spec.After = []string{rootStep}
		parts = append(parts, fmt.Sprintf("%s%d", partPrefix, i))
		steps = append(steps, &hopperv1.WorkflowStep{Name: parts[i], Job: spec})
	}
	gather := jobSpec(Args{SleepMS: 20 + rand.N(80), FanIn: true})
	gather.After = parts
	steps = append(steps, &hopperv1.WorkflowStep{Name: gatherStep, Job: gather})
	return &hopperv1.EnqueueWorkflowRequest{Name: "chaos-fan-in", Steps: steps}
}

// flowEnqueuer enqueues workflows through the API and keeps every acknowledged one with its
// steps' job ids; its enqueuer counts the jobs and the failed calls.
type flowEnqueuer struct {
	*enqueuer
	flows map[string][]string // workflow id → its steps' job ids; guarded by enqueuer.mu
}

// enqueueOnce enqueues one workflow through a.
func (f *flowEnqueuer) enqueueOnce(ctx context.Context, a *api) error {
	req := fanInWorkflow()
	res, err := call(ctx, f.enqueuer, func(ctx context.Context) (*hopperv1.EnqueueWorkflowResponse, error) {
		return a.flows.EnqueueWorkflow(ctx, req)
	})
	if err != nil {
		return err
	}
	ids := make([]string, len(res.GetJobs()))
	for i, j := range res.GetJobs() {
		ids[i] = j.GetId()
	}
	f.ack(ids)
	f.mu.Lock()
	f.flows[res.GetWorkflow().GetId()] = ids
	f.mu.Unlock()
	return nil
}

func (f *flowEnqueuer) workflows() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]string, len(f.flows))
	for id, ids := range f.flows {
		out[id] = ids
	}
	return out
}

// runWorkflowKills enqueues p.workflows fan-in workflows, paced over the kills' duration,
// through the live servers while dealKills kills workers and servers; half the workers take
// their jobs' parents' results with the jobs, half read them when the handler asks. Once the
// queue has drained it checks, from the API (verifyWorkflows), that every workflow completed
// with every step, that each gather step completed once with every parent's step name and
// final result, that no job waits with all its parents ended, and the contracts of
// verifyRuns for every step's job.
func runWorkflowKills(t *testing.T, h *harness, servers []*server, p flowParams) {
	fig := figures(t)
	for i := range p.kills.workers {
		h.startWorker(h.nextName("w"), servers[i%len(servers)].url(),
			workerOpts{mode: []string{"stream", "poll"}[i%2], fetchParents: i%4 < 2})
	}
	live := func() []*api {
		var out []*api
		for _, s := range servers {
			if s.alive() {
				out = append(out, s.api)
			}
		}
		return out
	}
	f := &flowEnqueuer{enqueuer: newEnqueuer(), flows: map[string][]string{}}
	ctx, stopEnqueue := context.WithCancel(t.Context())
	enqueued := make(chan struct{})
	defer func() { stopEnqueue(); <-enqueued }()
	go func() {
		defer close(enqueued)
		f.loop(ctx, live, p.enqueueFor/time.Duration(p.workflows), func(ctx context.Context, a *api) error {
			err := f.enqueueOnce(ctx, a)
			if len(f.workflows()) >= p.workflows {
				stopEnqueue()
			}
			return err
		})
	}()

	k := dealKills(t, h, servers, p.kills)
	defer k.wait()
	// The enqueues go on past the kills, paced, and then make up for calls refused while a
	// server was down.
	select {
	case <-enqueued:
	case <-time.After(60 * time.Second): // real time: the servers take them on the wall clock
		stopEnqueue()
		<-enqueued
	}
	enqueuedAt := time.Now()
	acked := f.workflows()
	require.Len(t, acked, p.workflows, "workflows acknowledged (enqueue errors: %s)", f.errorSummary())
	jobs := f.ids()
	drained, counts := h.drain(func() *api { return live()[0] }, len(jobs), 150*time.Second)
	drainedAt := time.Now()
	h.stopWorkers()
	k.wait()

	a := live()[0]
	logs := readWorkerLogs(t, h.dir)
	hist, err := a.histories(t.Context())
	require.NoError(t, err)
	fv := verifyWorkflows(t.Context(), a, acked, hist, logs)
	v := verifyRuns(jobs, hist, logs)

	fig.Jobs = fmt.Sprintf("%d workflows, %d jobs (%d handler runs; gather steps: %d runs)",
		len(acked), v.Jobs, v.Runs, fv.gatherRuns)
	fig.Lost = fmt.Sprintf("%d jobs; workflows not completed: %d", v.Lost, fv.notCompleted)
	if fv.unacked > 0 {
		fig.Lost += fmt.Sprintf(" (of them and %d stored without an answer)", fv.unacked)
	}
	fig.Dups = v.dupText()
	fig.Recovery = k.recovery(logs)
	fig.note("%d worker and %d server SIGKILLs while %d workflows were enqueued over %s; drained %s after the last enqueue; enqueue errors: %s",
		len(k.workers), len(k.servers), len(acked), secs(p.enqueueFor), secs(drainedAt.Sub(enqueuedAt)), f.errorSummary())
	v.require(t)
	require.Zero(t, v.Lost, "acknowledged jobs lost")
	if len(fv.violations) > 0 {
		shown := fv.violations[:min(20, len(fv.violations))]
		t.Errorf("%d workflow violations, the first %d:\n  %s", len(fv.violations), len(shown), strings.Join(shown, "\n  "))
	}
	require.True(t, drained, "the queue drains within 150 s (want %d jobs ended); last counts %v", len(jobs), counts)
}

// flowVerdict is what verifyWorkflows found.
type flowVerdict struct {
	notCompleted int // workflows (acknowledged or not) whose state is not completed
	unacked      int // workflows stored though their enqueue got no answer
	gatherRuns   int // handler starts of gather steps
	violations   []string
}

// verifyWorkflows checks every workflow the API lists, and every acknowledged one, from the
// API (hist: every job with its attempts) and, for the order of runs, the workers' logs:
//
//   - every acknowledged workflow is there, and every workflow is completed, with the steps it
//     was enqueued with, each completed: as many jobs carry its id (no job lost), and those of
//     an acknowledged one are the jobs its enqueue answered;
//   - its gather step completed with exactly its parts as parents, each by step name once, with
//     outcome completed and the result that part's job holds (a complete set of parent
//     results), which the part's successful run stored;
//   - no step's handler started before each of its parents' successful runs had ended;
//   - no job is left waiting, and none waits with all its parents ended.
func verifyWorkflows(ctx context.Context, a *api, acked map[string][]string, hist map[string]*jobHistory,
	logs *workerLogs) *flowVerdict {
	fv := &flowVerdict{}
	bad := func(format string, args ...any) { fv.violations = append(fv.violations, fmt.Sprintf(format, args...)) }
	listed, err := a.allWorkflows(ctx)
	if err != nil {
		bad("list workflows: %v", err)
		return fv
	}
	byWorkflow := map[string][]string{} // workflow id → the ids of the jobs that carry it
	for id, h := range hist {
		if wf := h.job.GetWorkflowId(); wf != "" {
			byWorkflow[wf] = append(byWorkflow[wf], id)
		}
	}
	for id := range acked {
		if _, ok := listed[id]; !ok {
			bad("workflow %s was acknowledged but is not listed", id)
			fv.notCompleted++
		}
	}
	for id, wf := range listed {
		if _, ok := acked[id]; !ok {
			fv.unacked++
		}
		if wf.GetState() != "completed" {
			fv.notCompleted++
			bad("workflow %s is %s (its steps: %v)", id, wf.GetState(), wf.GetStepStates())
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := a.flows.GetWorkflow(cctx, &hopperv1.GetWorkflowRequest{Id: id})
		cancel()
		if err != nil {
			bad("get workflow %s: %v", id, err)
			continue
		}
		verifyWorkflow(id, wf, res.GetSteps(), acked[id], byWorkflow[id], hist, logs, fv, bad)
	}
	verifyNoneWaiting(ctx, a, hist, bad)
	return fv
}

// verifyWorkflow checks one workflow's steps (see verifyWorkflows).
func verifyWorkflow(id string, wf *hopperv1.Workflow, steps []*hopperv1.WorkflowStepStatus, ackedIDs, carrying []string,
	hist map[string]*jobHistory, logs *workerLogs, fv *flowVerdict, bad func(string, ...any)) {
	if int(wf.GetSteps()) != len(steps) || len(carrying) != len(steps) {
		bad("workflow %s was enqueued with %d steps; it shows %d, and %d jobs carry its id", id, wf.GetSteps(), len(steps), len(carrying))
	}
	var stepIDs []string
	byName := map[string]*hopperv1.WorkflowStepStatus{}
	for _, s := range steps {
		stepIDs = append(stepIDs, s.GetJob().GetId())
		byName[s.GetJob().GetStep()] = s
	}
	if ackedIDs != nil && !sameSet(ackedIDs, stepIDs) {
		bad("workflow %s: its steps' jobs %v are not the %v its enqueue answered", id, stepIDs, ackedIDs)
	}
	for _, s := range steps {
		job := s.GetJob()
		if job.GetState() != "completed" {
			bad("workflow %s: step %s (job %s) is %s (last error %q)", id, job.GetStep(), job.GetId(), job.GetState(), job.GetLastError())
		}
		for _, parent := range s.GetAfter() {
			if ps := byName[parent]; ps != nil {
				verifyAfter(id, job, ps.GetJob(), hist, logs, bad)
			}
		}
	}
	gather := byName[gatherStep]
	if gather == nil {
		bad("workflow %s has no step %s", id, gatherStep)
		return
	}
	gid := gather.GetJob().GetId()
	fv.gatherRuns += len(logs.starts[gid])
	if gather.GetJob().GetState() != "completed" {
		return
	}
	oks := 0
	if h := hist[gid]; h != nil {
		for _, at := range h.attempts {
			if at.GetOutcome() == "ok" {
				oks++
			}
		}
	}
	if end := logs.ends[runKey{gid, okToken(hist[gid])}]; oks != 1 || end.Outcome != "ok" {
		bad("workflow %s: the gather step has %d ok attempts, and its run of token %d ended %q in the workers' logs",
			id, oks, okToken(hist[gid]), end.Outcome)
	}
	var got Result
	if err := json.Unmarshal([]byte(gather.GetJob().GetResult()), &got); err != nil {
		bad("workflow %s: the gather step's result %q: %v", id, gather.GetJob().GetResult(), err)
		return
	}
	var seen []string
	for _, p := range got.Parents {
		seen = append(seen, p.Step)
		ps := byName[p.Step]
		switch {
		case ps == nil || !strings.HasPrefix(p.Step, partPrefix):
			bad("workflow %s: the gather step read a parent %q (%s), not one of its parts", id, p.Step, p.ID)
			continue
		case p.ID != ps.GetJob().GetId():
			bad("workflow %s: the gather step read step %s as job %s; it is %s", id, p.Step, p.ID, ps.GetJob().GetId())
		case p.Outcome != "completed" || p.Expired:
			bad("workflow %s: the gather step read step %s with outcome %q (expired %t)", id, p.Step, p.Outcome, p.Expired)
		}
		if !sameJSON(p.Result, []byte(ps.GetJob().GetResult())) {
			bad("workflow %s: the gather step read step %s's result %s; it holds %s", id, p.Step, p.Result, ps.GetJob().GetResult())
		}
		var pr Result
		if ok := okToken(hist[p.ID]); json.Unmarshal(p.Result, &pr) != nil || pr.Token != ok {
			bad("workflow %s: the gather step read step %s's result %s, not its successful run's (token %d)", id, p.Step, p.Result, ok)
		}
	}
	if want := gather.GetAfter(); !slices.Equal(seen, want) {
		bad("workflow %s: the gather step read the parents %v; it runs after %v", id, seen, want)
	}
}

// verifyAfter requires every handler start of child to come after the end of the successful
// run of parent (by the workers' clocks, which are this machine's): a step never runs before
// its parents have ended.
func verifyAfter(wf string, child, parent *hopperv1.Job, hist map[string]*jobHistory, logs *workerLogs, bad func(string, ...any)) {
	end, ok := logs.ends[runKey{parent.GetId(), okToken(hist[parent.GetId()])}]
	if !ok {
		return // not completed: reported with the step's state
	}
	for _, s := range logs.starts[child.GetId()] {
		if s.T < end.T {
			bad("workflow %s: step %s started (token %d) %s before its parent %s ended", wf, child.GetStep(), s.Token,
				time.Duration(end.T-s.T), parent.GetStep())
		}
	}
}

// verifyNoneWaiting requires no job to be left waiting, and says of each one that is whether
// all its parents have ended (it was never released) or which one it still waits for.
func verifyNoneWaiting(ctx context.Context, a *api, hist map[string]*jobHistory, bad func(string, ...any)) {
	waiting, err := a.allJobs(ctx, "waiting")
	if err != nil {
		bad("list waiting jobs: %v", err)
		return
	}
	for _, j := range waiting {
		wf := j.GetWorkflowId()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := a.flows.GetWorkflow(cctx, &hopperv1.GetWorkflowRequest{Id: wf})
		cancel()
		if err != nil {
			bad("job %s waits; get its workflow %q: %v", j.GetId(), wf, err)
			continue
		}
		var after []string
		state := map[string]string{}
		for _, s := range res.GetSteps() {
			state[s.GetJob().GetStep()] = s.GetJob().GetState()
			if s.GetJob().GetId() == j.GetId() {
				after = s.GetAfter()
			}
		}
		var open []string
		for _, p := range after {
			if !ended(state[p]) {
				open = append(open, p+" "+state[p])
			}
		}
		if len(open) == 0 {
			bad("job %s (workflow %s, step %s) waits though its parents %v have all ended", j.GetId(), wf, j.GetStep(), after)
		} else {
			bad("job %s (workflow %s, step %s) still waits for %v", j.GetId(), wf, j.GetStep(), open)
		}
	}
}

func ended(state string) bool {
	return state == "completed" || state == "failed" || state == "canceled"
}

// okToken is the lease token of the job's ok attempt, or 0.
func okToken(h *jobHistory) int64 {
	if h == nil {
		return 0
	}
	for _, a := range h.attempts {
		if a.GetOutcome() == "ok" {
			return a.GetLeaseToken()
		}
	}
	return 0
}

// allWorkflows lists every workflow through a, by id.
func (a *api) allWorkflows(ctx context.Context) (map[string]*hopperv1.Workflow, error) {
	out := map[string]*hopperv1.Workflow{}
	cursor := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := a.flows.ListWorkflows(cctx, &hopperv1.ListWorkflowsRequest{Limit: 10000, Cursor: cursor})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		for _, wf := range res.GetWorkflows() {
			out[wf.GetId()] = wf
		}
		if cursor = res.GetNextCursor(); cursor == "" {
			return out, nil
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
