package hopper

import (
	"sort"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

// nightly is the workflow of the schedule tests: an export, then a report after it.
func nightly() *Workflow {
	return &Workflow{Name: "nightly", Steps: []WorkflowStep{
		{Name: "report", Args: digest{List: "report"}, After: []string{"export"}, OnParentFailure: ParentRun},
		{Name: "export", Args: digest{List: "export"}, Opts: &InsertOpts{Queue: "exports"}},
	}}
}

// workflowFires returns the fire times of the workflows schedule name started, oldest first,
// checking that each is one whole workflow.
func (n *scheduleNode) workflowFires(t *testing.T, name string) []time.Time {
	t.Helper()
	list, err := n.client.ListWorkflows(t.Context(), &WorkflowListParams{Limit: 10000})
	require.NoError(t, err)
	var out []time.Time
	for _, w := range list.Workflows {
		d, err := n.client.Workflow(t.Context(), w.ID)
		require.NoError(t, err)
		require.Len(t, d.Steps, 2)
		fire := d.Steps[0].Job.Headers[FireTimeHeader]
		for _, s := range d.Steps {
			require.Equal(t, name, s.Job.ScheduleID)
			require.Equal(t, fire, s.Job.Headers[FireTimeHeader], "every step stands for the fire time")
		}
		at, err := time.Parse(time.RFC3339Nano, fire)
		require.NoError(t, err)
		out = append(out, at)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// A workflow schedule starts exactly one workflow per fire time: its steps, parents waiting
// for theirs, with their own options; the schedule names the newest as its last workflow.
func TestScheduleStartsOneWorkflowPerFire(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil)
	info, err := n.client.AddSchedule(t.Context(), Schedule{Name: "nightly", Cron: "* * * * *", Workflow: nightly(),
		Overlap: OverlapAllow})
	require.NoError(t, err)
	require.NotNil(t, info.Workflow)
	require.Equal(t, "nightly", info.Workflow.Name)
	require.Equal(t, []string{"export"}, info.Workflow.Steps[1].After, "kept parents first")
	require.Empty(t, info.Kind)

	n.advanceTo(t, "nightly", testStart.Add(time.Minute))
	requireTimes(t, minutes(testStart, 1), n.workflowFires(t, "nightly"))
	info, err = n.client.GetSchedule(t.Context(), "nightly")
	require.NoError(t, err)
	require.NotEmpty(t, info.LastWorkflowID)
	require.Equal(t, testStart.Add(time.Minute), info.LastFireAt)
	d, err := n.client.Workflow(t.Context(), info.LastWorkflowID)
	require.NoError(t, err)
	require.Equal(t, "nightly", d.Workflow.Name)
	require.Equal(t, "export", d.Steps[0].Job.Step)
	require.Equal(t, "exports", d.Steps[0].Job.Queue)
	require.Equal(t, StateQueued, d.Steps[0].Job.State)
	require.Equal(t, StateWaiting, d.Steps[1].Job.State)
	require.Equal(t, []string{"export"}, d.Steps[1].After)

	n.advanceTo(t, "nightly", testStart.Add(2*time.Minute))
	requireTimes(t, minutes(testStart, 1, 2), n.workflowFires(t, "nightly"))
	jobs, err := n.client.List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 4, "two workflows of two steps, no job of the schedule's own")

	// Run now starts one more, outside the fire times.
	job, err := n.client.RunSchedule(t.Context(), "nightly")
	require.NoError(t, err)
	require.Equal(t, "export", job.Step)
	require.Equal(t, "true", job.Headers[ManualFireHeader])
	require.NotEmpty(t, job.WorkflowID)
}

// After an outage, a workflow schedule catches up as a job schedule does: a workflow for
// every missed fire time (all), for the latest (last), or none (skip).
func TestScheduleWorkflowCatchUpAfterOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy CatchUp
		missed []int
	}{
		{CatchUpAll, []int{2, 3, 4, 5, 6}},
		{CatchUpLast, []int{6}},
		{CatchUpSkip, nil},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			path, clk := t.TempDir()+"/hopper.db", clock.NewFake(testStart)
			a := openNode(t, path, clk, nil, nil)
			_, err := a.client.AddSchedule(t.Context(), Schedule{Name: "s", Cron: "* * * * *", Workflow: nightly(),
				CatchUp: tc.policy, Overlap: OverlapAllow})
			require.NoError(t, err)
			a.advanceTo(t, "s", testStart.Add(time.Minute))
			a.stop(t)

			clk.Advance(6*time.Minute + 45*time.Second - (clk.Now().Sub(testStart)))
			b := openNode(t, path, clk, nil, nil)
			b.advanceTo(t, "s", testStart.Add(6*time.Minute+45*time.Second))
			b.advanceTo(t, "s", testStart.Add(7*time.Minute))
			want := append(append([]int{1}, tc.missed...), 7)
			requireTimes(t, minutes(testStart, want...), b.workflowFires(t, "s"))
		})
	}
}

// A workflow schedule in another time zone fires at that zone's times.
func TestScheduleWorkflowInATimeZone(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil) // 12:00 UTC is 13:00 in Paris (winter)
	_, err := n.client.AddSchedule(t.Context(), Schedule{Name: "paris", Cron: "30 13 * * *", TZ: "Europe/Paris",
		Workflow: nightly()})
	require.NoError(t, err)
	n.advanceTo(t, "paris", testStart.Add(30*time.Minute))
	requireTimes(t, []time.Time{testStart.Add(30 * time.Minute)}, n.workflowFires(t, "paris"))
}

// A workflow schedule is checked when added, its fields named under workflow.
func TestAddWorkflowScheduleValidates(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil)
	bad := func(mut func(*Schedule)) Schedule {
		s := Schedule{Name: "w", Cron: "* * * * *", Workflow: nightly()}
		mut(&s)
		return s
	}
	for want, s := range map[string]Schedule{
		"workflow":                    bad(func(s *Schedule) { s.Kind = "digest" }),
		"workflow.":                   bad(func(s *Schedule) { s.Queue = "q" }),
		"fixed_delay":                 bad(func(s *Schedule) { s.Cron, s.FixedDelay = "", time.Minute }),
		"workflow.name":               bad(func(s *Schedule) { s.Workflow.Name = "" }),
		"workflow.steps[0].after[0]":  bad(func(s *Schedule) { s.Workflow.Steps[0].After = []string{"nope"} }),
		"workflow.steps[1].queue":     bad(func(s *Schedule) { s.Workflow.Steps[1].Opts = &InsertOpts{Queue: "a b"} }),
		"workflow.steps[1].run_at":    bad(func(s *Schedule) { s.Workflow.Steps[1].Opts = &InsertOpts{RunAt: testStart} }),
		"workflow.steps[1].merge_key": bad(func(s *Schedule) { s.Workflow.Steps[1].Opts = &InsertOpts{MergeKey: "k"} }),
	} {
		_, err := n.client.AddSchedule(t.Context(), s)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, want)
		if want == "workflow." {
			want = "workflow"
		}
		require.Equal(t, want, ve.Field)
	}
	// A delay is kept: the step starts that long after each fire time.
	s := bad(func(s *Schedule) { s.Workflow.Steps[1].Opts = &InsertOpts{Delay: time.Minute} })
	info, err := n.client.AddSchedule(t.Context(), s)
	require.NoError(t, err)
	require.Equal(t, time.Minute, info.Workflow.Steps[0].Opts.Delay)
}
