package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/jsoncodec"
	"github.com/spf13/cobra"
)

func newWorkflowsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "Enqueue, list, show and cancel workflows (jobs enqueued together, each step after the steps it names)",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	cmd.AddCommand(newWorkflowsEnqueueCmd(), newWorkflowsBatchCmd(), newWorkflowsLsCmd(), newWorkflowsShowCmd(), newWorkflowsCancelCmd())
	return cmd
}

func newWorkflowsEnqueueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enqueue FILE",
		Short: "Enqueue the workflow a JSON file describes (- reads it from stdin) and print its id",
		Long: `enqueue reads a workflow from FILE (- for stdin) and enqueues all its steps in one
transaction: all of them, or nothing when one is wrong (the error names it: steps[2].after[0]).
The file is a JSON object:

  {"name": "publish-album",
   "steps": [
     {"name": "fetch", "kind": "fetch-photos", "args": {"album": 7}},
     {"name": "small", "kind": "resize", "args": {"size": 320}, "after": ["fetch"]},
     {"name": "large", "kind": "resize", "args": {"size": 2048}, "after": ["fetch"], "queue": "big"},
     {"name": "publish", "kind": "publish-album", "args": {"album": 7}, "after": ["small", "large"],
      "on_parent_failure": "run"}]}

Each step has a name (unique in the workflow), the kind and args of its job, the names of the
steps it runs after ("after") and the options of the API's JobSpec (docs/api.md): queue,
priority, max_attempts, max_rescues, timeout ("30s"), delay, run_at, headers, group_key,
fairness_key, retry_policy, on_parent_failure (cancel, run or skip). A step without "after"
starts at once; the others wait for theirs (docs/workflows.md).`,
		Example: `  hopper workflows enqueue publish-album.json
  hopper workflows enqueue - < nightly.json`,
		Args: cobra.ExactArgs(1),
		RunE: runWorkflowsEnqueue,
	}
	addJSONFlag(cmd)
	return cmd
}

func runWorkflowsEnqueue(cmd *cobra.Command, args []string) error {
	wf, err := readWorkflowFile(cmd.InOrStdin(), args[0])
	if err != nil {
		return err
	}
	return withBackend(cmd, false, func(client backend) error {
		res, err := client.EnqueueWorkflow(cmd.Context(), wf)
		if err != nil {
			return err
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Workflow apiJSON   `json:"workflow"`
				Jobs     []apiJSON `json:"jobs"`
			}{apiJSON{apiview.Workflow(res.Workflow)}, apiJobs(res.Jobs)})
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Workflow.ID)
		return err
	})
}

func newWorkflowsBatchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch FILE",
		Short: "Enqueue a batch with a callback that a JSON file describes (- reads it from stdin) and print its workflow id",
		Long: `batch reads a batch from FILE (- for stdin): jobs, and a callback job that runs once every
one of them has ended, completed, failed or canceled. It is enqueued as one workflow, all of
it or nothing (docs/workflows.md, "Batches with a callback"): its jobs are steps job-0,
job-1…, its callback the step "callback" after all of them with policy run. The file is a
JSON object whose jobs are the API's JobSpec (kind, args, queue, timeout…):

  {"name": "resize-album",
   "jobs": [{"kind": "resize", "args": {"photo": 1}}, {"kind": "resize", "args": {"photo": 2}}],
   "callback": {"kind": "album-ready", "args": {"album": 7}}}`,
		Example: `  hopper workflows batch resize-album.json
  hopper workflows show $(hopper workflows batch resize-album.json)`,
		Args: cobra.ExactArgs(1),
		RunE: runWorkflowsBatch,
	}
	addJSONFlag(cmd)
	return cmd
}

func runWorkflowsBatch(cmd *cobra.Command, args []string) error {
	b, err := readBatchFile(cmd.InOrStdin(), args[0])
	if err != nil {
		return err
	}
	wf, err := b.Workflow()
	if err != nil {
		return err
	}
	return withBackend(cmd, false, func(client backend) error {
		res, err := client.EnqueueWorkflow(cmd.Context(), wf)
		if err != nil {
			return b.Refusal(err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Workflow apiJSON   `json:"workflow"`
				Jobs     []apiJSON `json:"jobs"`
			}{apiJSON{apiview.Workflow(res.Workflow)}, apiJobs(res.Jobs)})
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Workflow.ID)
		return err
	})
}

// readBatchFile reads the batch document at path (- for stdin): its name, its jobs and its
// callback, each the API's JobSpec (read as the API reads it, by package jsoncodec).
func readBatchFile(stdin io.Reader, path string) (hopper.JobBatch, error) {
	raw, err := readFileOrStdin(stdin, path)
	if err != nil {
		return hopper.JobBatch{}, usageErrorf("read batch: %v", err)
	}
	var doc struct {
		Name     string            `json:"name"`
		Jobs     []json.RawMessage `json:"jobs"`
		Callback json.RawMessage   `json:"callback"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return hopper.JobBatch{}, usageErrorf("read batch %s: %v (want {\"name\": …, \"jobs\": [{\"kind\": …}, …], \"callback\": {\"kind\": …}})", path, err)
	}
	job := func(field string, text json.RawMessage) (hopper.BatchJob, error) {
		spec := &hopperv1.JobSpec{}
		if len(text) > 0 {
			if err := jsoncodec.Unmarshal(text, spec); err != nil {
				return hopper.BatchJob{}, usageErrorf("read batch %s: %s: %v", path, field, err)
			}
		}
		p, err := apispec.FromJobSpec(spec)
		if err != nil {
			return hopper.BatchJob{}, err
		}
		return hopper.BatchJob{Args: p.Args, Opts: p.Opts}, nil
	}
	b := hopper.JobBatch{Name: doc.Name, Jobs: make([]hopper.BatchJob, len(doc.Jobs))}
	for i, text := range doc.Jobs {
		if b.Jobs[i], err = job(fmt.Sprintf("jobs[%d]", i), text); err != nil {
			return hopper.JobBatch{}, err
		}
	}
	if b.Callback, err = job("callback", doc.Callback); err != nil {
		return hopper.JobBatch{}, err
	}
	return b, nil
}

// readFileOrStdin reads path, or stdin for -.
func readFileOrStdin(stdin io.Reader, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// readWorkflowFile reads the workflow document at path (- for stdin): its name, and steps each
// of which is the API's JobSpec (read as the API reads it, by package jsoncodec) with a name.
func readWorkflowFile(stdin io.Reader, path string) (hopper.Workflow, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return hopper.Workflow{}, usageErrorf("read workflow: %v", err)
	}
	var doc struct {
		Name  string                       `json:"name"`
		Steps []map[string]json.RawMessage `json:"steps"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return hopper.Workflow{}, usageErrorf("read workflow %s: %v (want {\"name\": …, \"steps\": [{\"name\": …, \"kind\": …}, …]})", path, err)
	}
	req := &hopperv1.EnqueueWorkflowRequest{Name: doc.Name, Steps: make([]*hopperv1.WorkflowStep, len(doc.Steps))}
	for i, fields := range doc.Steps {
		step := &hopperv1.WorkflowStep{Job: &hopperv1.JobSpec{}}
		if name, ok := fields["name"]; ok {
			if err := json.Unmarshal(name, &step.Name); err != nil {
				return hopper.Workflow{}, usageErrorf("read workflow %s: steps[%d].name is not a string", path, i)
			}
			delete(fields, "name")
		}
		job, _ := json.Marshal(fields) // raw values re-joined: always valid
		if err := jsoncodec.Unmarshal(job, step.Job); err != nil {
			return hopper.Workflow{}, usageErrorf("read workflow %s: steps[%d]: %v", path, i, err)
		}
		req.Steps[i] = step
	}
	wf, err := apispec.FromWorkflowRequest(req)
	if err != nil {
		return hopper.Workflow{}, apispec.FromWorkflowError(err)
	}
	return wf, nil
}

type workflowsLsFlags struct {
	name   string
	states []string
	limit  int
	cursor string
}

func newWorkflowsLsCmd() *cobra.Command {
	var f workflowsLsFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List workflows, newest first, with their state and how many steps have ended",
		Example: `  hopper workflows ls --state running
  hopper workflows ls --name publish-album --state failed,canceled --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorkflowsLs(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "only workflows of this name")
	fl.StringSliceVar(&f.states, "state", nil, "only workflows in these states: running, completed, failed, canceled (repeatable or comma-separated)")
	fl.IntVar(&f.limit, "limit", 50, "page size, 1 to 10000")
	fl.StringVar(&f.cursor, "cursor", "", "continue from a previous page's next cursor")
	addJSONFlag(cmd)
	return cmd
}

func runWorkflowsLs(cmd *cobra.Command, f *workflowsLsFlags) error {
	if f.limit < 1 || f.limit > 10000 {
		return usageErrorf("invalid --limit: %d is outside 1–10000", f.limit)
	}
	p := &hopper.WorkflowListParams{Name: f.name, Limit: f.limit, Cursor: f.cursor}
	for _, s := range f.states {
		st, err := hoppertype.ParseWorkflowState(s)
		if err != nil {
			return usageErrorf("invalid --state: %v", err)
		}
		p.States = append(p.States, st)
	}
	return withBackend(cmd, true, func(client backend) error {
		res, err := client.ListWorkflows(cmd.Context(), p)
		if err != nil {
			return fmt.Errorf("list workflows: %w", err)
		}
		if wantJSON(cmd) {
			out := make([]apiJSON, len(res.Workflows))
			for i, w := range res.Workflows {
				out[i] = apiJSON{apiview.Workflow(w)}
			}
			return printJSON(cmd.OutOrStdout(), &struct {
				Workflows  []apiJSON `json:"workflows"`
				NextCursor string    `json:"nextCursor"`
			}{out, res.NextCursor})
		}
		return printWorkflows(cmd.OutOrStdout(), res, time.Now())
	})
}

func printWorkflows(w io.Writer, res *hopper.WorkflowListResult, now time.Time) error {
	if len(res.Workflows) == 0 {
		_, err := fmt.Fprintln(w, "no workflows")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tENDED\tCREATED\tDURATION")
	for _, wf := range res.Workflows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", wf.ID, wf.Name, wf.State, ended(wf), wf.Steps,
			showTime(wf.CreatedAt, tableTime), span(wf.CreatedAt, wf.FinishedAt, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.NextCursor != "" {
		_, err := fmt.Fprintf(w, "\nmore workflows: --cursor %s\n", res.NextCursor)
		return err
	}
	return nil
}

// ended is how many of the workflow's steps have ended.
func ended(w *hopper.WorkflowRow) int {
	n := 0
	for st, c := range w.StepStates {
		if st.Terminal() {
			n += c
		}
	}
	return n
}

// span is how long from start to end, or to now while end is zero; "-" without a start.
func span(start, end, now time.Time) string {
	switch {
	case start.IsZero():
		return "-"
	case end.IsZero():
		return roundDuration(now.Sub(start)).String() + "+"
	}
	return roundDuration(end.Sub(start)).String()
}

func newWorkflowsShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a workflow and its steps: state, attempts, when each was created, started and ended, its wait from release to start, and what it runs after",
		Long: `Show a workflow: its state (derived from its steps), its steps counted by state, when it
was created, when its first step started and, once it has ended, when its last step ended.
Then each step, parents first: its state, attempts, when it was created, when its latest
attempt started and when it ended, WAIT (from when it became due, its release from waiting
for a step with parents, to its latest start; "-" until it starts), DURATION (from its start
to its end, "+" while it runs), the steps it runs after, and its job id.`,
		Args: cobra.ExactArgs(1),
		RunE: runWorkflowsShow,
	}
	addJSONFlag(cmd)
	return cmd
}

func runWorkflowsShow(cmd *cobra.Command, args []string) error {
	id := args[0]
	return withBackend(cmd, true, func(client backend) error {
		d, err := client.Workflow(cmd.Context(), id)
		if err != nil {
			return workflowNotFound(id, err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), workflowJSON(d))
		}
		return printWorkflow(cmd.OutOrStdout(), d, time.Now())
	})
}

// workflowJSON is a workflow as WorkflowService.GetWorkflow shows it, its lists printed even
// when empty.
func workflowJSON(d *hopper.WorkflowDetail) any {
	type step struct {
		Job   apiJSON  `json:"job"`
		After []string `json:"after"`
	}
	steps := make([]step, len(d.Steps))
	for i, s := range d.Steps {
		steps[i] = step{apiJob(s.Job), s.After}
		if steps[i].After == nil {
			steps[i].After = []string{}
		}
	}
	return &struct {
		Workflow apiJSON `json:"workflow"`
		Steps    []step  `json:"steps"`
	}{apiJSON{apiview.Workflow(d.Workflow)}, steps}
}

func printWorkflow(w io.Writer, d *hopper.WorkflowDetail, now time.Time) error {
	wf := d.Workflow
	fmt.Fprintf(w, "Workflow %s\n\n", wf.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("name", wf.Name)
	row("state", string(wf.State))
	row("steps", stepCounts(wf))
	row("created", showTime(wf.CreatedAt, detailTime))
	row("started", showTime(wf.StartedAt, detailTime))
	if !wf.FinishedAt.IsZero() {
		row("finished", showTime(wf.FinishedAt, detailTime)+" (took "+span(wf.CreatedAt, wf.FinishedAt, now)+")")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATE\tATTEMPT\tCREATED\tSTARTED\tFINISHED\tWAIT\tDURATION\tAFTER\tJOB")
	for _, s := range d.Steps {
		j := s.Job
		after := strings.Join(s.After, ",")
		if after == "" {
			after = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Step, stateCell(j), attemptCount(j.Attempt, j.MaxAttempts),
			showTime(j.CreatedAt, tableTime), showTime(j.StartedAt, tableTime), showTime(j.FinishedAt, tableTime),
			stepWait(j), stepSpan(j, now), after, j.ID)
	}
	return tw.Flush()
}

// stepWait is how long a step waited from becoming due (its release from waiting, for a step
// with parents) to its latest start; "-" when it has not started since.
func stepWait(j *hopper.JobRow) string {
	wait, ok := j.StartWait()
	if !ok {
		return "-"
	}
	return roundDuration(wait).String()
}

// stepCounts is "4: 1 completed, 1 running, 2 waiting", the states in their usual order.
func stepCounts(wf *hopper.WorkflowRow) string {
	var parts []string
	for _, st := range hoppertype.AllStates {
		if n := wf.StepStates[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprint(wf.Steps)
	}
	return fmt.Sprintf("%d: %s", wf.Steps, strings.Join(parts, ", "))
}

// stepSpan is how long a step ran: from its start to its end, or to now while it runs; "-"
// for a step that has not started (or ended without running).
func stepSpan(j *hopper.JobRow, now time.Time) string {
	if j.State != hopper.StateRunning && j.FinishedAt.IsZero() {
		return "-"
	}
	return span(j.StartedAt, j.FinishedAt, now)
}

func newWorkflowsCancelCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel ID [--reason TEXT]",
		Short: "Cancel every step of a workflow that has not ended",
		Long: `Cancel, in one transaction, every step of the workflow that has not ended: waiting,
scheduled, queued, suspended and running steps end canceled (a running step's handler is told
to stop, as by 'hopper jobs cancel'), steps that ended stay as they were, and no step is
released afterwards. Each canceled step's history records an operator's cancel with --reason.`,
		Example: `  hopper workflows cancel 0192… --reason "album withdrawn"`,
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runWorkflowsCancel(cmd, args[0], reason) },
	}
	cmd.Flags().StringVar(&reason, "reason", "workflow canceled with the CLI", "recorded in the history of each step it cancels")
	addJSONFlag(cmd)
	return cmd
}

func runWorkflowsCancel(cmd *cobra.Command, id, reason string) error {
	return withBackend(cmd, true, func(client backend) error {
		res, err := client.CancelWorkflow(cmd.Context(), id, reason)
		if errors.Is(err, hopper.ErrInvalidTransition) {
			msg := fmt.Sprintf("workflow %s cannot be canceled: every step has ended", id)
			if d, gerr := client.Workflow(cmd.Context(), id); gerr == nil {
				msg = fmt.Sprintf("workflow %s cannot be canceled: it has already %s", id, endedAs(d.Workflow.State))
			}
			return &exitError{code: ExitConflict, msg: msg, err: err}
		}
		if err != nil {
			return workflowNotFound(id, err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Workflow apiJSON   `json:"workflow"`
				Canceled []apiJSON `json:"canceled"`
			}{apiJSON{apiview.Workflow(res.Workflow)}, apiJobs(res.Canceled)})
		}
		names := make([]string, len(res.Canceled))
		for i, j := range res.Canceled {
			names[i] = j.Step
		}
		slices.Sort(names)
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "workflow %s canceled: %d steps (%s)\n", id, len(names), strings.Join(names, ", "))
		return err
	})
}

// endedAs is how a workflow that has ended ended, as a verb: "completed", "failed".
func endedAs(s hopper.WorkflowState) string {
	if s == hopper.WorkflowCanceled {
		return "been canceled"
	}
	return string(s)
}

// workflowNotFound names the workflow that is not there (exit code 3).
func workflowNotFound(id string, err error) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &exitError{code: ExitNotFound, msg: fmt.Sprintf("workflow %s not found", id), err: err}
	}
	return err
}
