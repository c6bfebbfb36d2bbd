package sqlite_test

import (
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// Reading a job's parents, with their results or without, costs a look-up of its dependency
// rows by the child's index, then each parent by primary key: never a scan of job_deps or
// jobs, whatever their size.
func TestParentsPlan(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.ParentsPlan(s)
	require.NoError(t, err)
	t.Log(plan)
	require.Contains(t, plan, "job_deps_child", plan)
	require.NotContains(t, plan, "SCAN d", plan)
	require.NotContains(t, plan, "SCAN j", plan)
}

// A child's insert flags its parents by primary key, in one statement: never a scan of jobs.
func TestFlagParentsPlan(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.FlagParentsPlan(s)
	require.NoError(t, err)
	require.Contains(t, plan, "SEARCH jobs USING COVERING INDEX sqlite_autoindex_jobs_1 (id=?)", plan)
	require.NotContains(t, plan, "SCAN jobs", plan)
}

// A round of endings finds their children through job_deps' primary key and each child by
// its own: never a scan of jobs or job_deps, whatever their size. Each statement reads its
// JSON array once, and the settling of the children neither sorts nor builds an index: the
// counted dependencies are grouped by child in Go (store.CountChildren), where a GROUP BY
// and joins back to the round cost a sort and two automatic indexes a round.
func TestReleasePlan(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	for name, plan := range map[string]func(*sqlite.Store) (string, error){
		"release": sqlite.ReleasePlan, "count": sqlite.CountPlan,
	} {
		got, err := plan(s)
		require.NoError(t, err)
		t.Logf("%s:\n%s", name, got)
		require.NotContains(t, got, "SCAN jobs", name)
		require.NotContains(t, got, "SCAN job_deps", name)
		require.NotContains(t, got, "SCAN d\n", name)
		require.Equal(t, 1, strings.Count(got, "VIRTUAL TABLE"), name)
		require.NotContains(t, got, "AUTOMATIC", name)
		require.NotContains(t, got, "TEMP B-TREE", name)
	}
}

// A page of a job's children, and their count, look up its dependency rows by primary key
// (parent first), then each child by primary key: never a scan of job_deps or jobs.
func TestChildrenPlans(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.ChildrenPlans(s)
	require.NoError(t, err)
	t.Log(plan)
	require.NotContains(t, plan, "SCAN d", plan)
	require.NotContains(t, plan, "SCAN j", plan)
	require.NotContains(t, plan, "TEMP B-TREE", plan, "the dependency rows come in child order")
}

// A page of a workflow's steps reads the workflow's steps by the index jobs_workflow_id from
// the cursor on, in id order (never a sort of every step of the workflow), and the names they
// run after by the child index of job_deps: never a scan of jobs or job_deps.
func TestWorkflowStepsPlans(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.WorkflowStepsPlans(s)
	require.NoError(t, err)
	t.Log(plan)
	require.Contains(t, plan, "jobs_workflow_id (workflow_id=? AND id>?)", plan)
	require.Contains(t, plan, "job_deps_child", plan)
	require.NotContains(t, plan, "TEMP B-TREE", plan, "the steps and their dependency rows come in id order")
	require.Regexp(t, `SEARCH p USING [A-Z ]*INDEX \w+ \((workflow_id=\? AND )?id=\?\)`, plan, "each parent by its id")
	require.NotContains(t, plan, "SCAN jobs", plan)
	require.NotContains(t, plan, "SCAN d", plan)
	require.NotContains(t, plan, "SCAN p", plan)
}

// A pass of the marking of ended workflows reads its batch from the index workflows_open and
// then only the rows of that batch, by id, with their steps by index: never a scan of
// workflows (a range of ids behind an old open workflow spans every marked one) or of jobs.
func TestWorkflowMarkPlans(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.WorkflowMarkPlans(s)
	require.NoError(t, err)
	t.Log(plan)
	require.Contains(t, plan, "workflows_open", plan)
	require.Contains(t, plan, "jobs_workflow_id", plan)
	require.NotContains(t, plan, "TEMP B-TREE", "the steps walked in the index's order: "+plan)
	require.NotContains(t, plan, "SCAN workflows", plan)
	require.Contains(t, plan, "SEARCH workflows USING PRIMARY KEY (id=?)", plan)
	require.NotContains(t, plan, "id<?", "no range of ids: "+plan)
	require.NotContains(t, plan, "SCAN j\n", plan)
	require.NotContains(t, plan, "SCAN jobs", plan)
}

// A list of the ended workflows aggregates the steps of only those open workflows with no
// step that has not ended (openStep: a walk of jobs_workflow_id), not of every open workflow,
// and never scans jobs.
func TestWorkflowEndedListPlan(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.WorkflowEndedListPlan(s)
	require.NoError(t, err)
	t.Log(plan)
	require.Contains(t, plan, "workflows_ended", plan)
	require.Contains(t, plan, "jobs_workflow_id", plan)
	require.NotContains(t, plan, "SCAN jobs", plan)
	require.NotContains(t, plan, "SCAN o\n", plan)
}

// A workflow's steps' parents are read step by step: each step's dependency rows, each parent
// by its id. Never the workflow's steps walked once per step (jobs_workflow_id on both sides
// of the join: quadratic, 10^10 rows for a workflow of 100,000 steps).
func TestStepParentsPlan(t *testing.T) {
	t.Parallel()
	s := openFresh(t)
	plan, err := sqlite.StepParentsPlan(s)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(plan), "\n")
	require.GreaterOrEqual(t, len(lines), 3, plan)
	require.Contains(t, lines[0], "SEARCH c USING COVERING INDEX jobs_workflow_id", plan)
	require.Contains(t, lines[1], "SEARCH d USING COVERING INDEX job_deps_child", plan)
	require.Regexp(t, `SEARCH p USING .*\(.*id=\?\)`, lines[2], plan)
	require.NotContains(t, plan, "SCAN", plan)
}
