package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

// jobDetail is everything `jobs show` prints about one job.
type jobDetail struct {
	job      *hopper.JobRow
	attempts []*hopper.AttemptRecord
	events   []*hopper.Event
	// compactedFrom are the jobs it replaced in a compaction, compactedInto the job that
	// replaced it.
	compactedFrom []string
	compactedInto string
}

func newJobsShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a job with its attempts and history",
		Args:  cobra.ExactArgs(1),
		RunE:  runJobsShow,
	}
	addJSONFlag(cmd)
	return cmd
}

func runJobsShow(cmd *cobra.Command, args []string) error {
	id := args[0]
	return withBackend(cmd, true, func(client backend) error {
		d, err := loadDetail(cmd, client, id)
		if err != nil {
			return notFound(id, err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), d.json())
		}
		return d.print(cmd.OutOrStdout(), time.Now())
	})
}

func loadDetail(cmd *cobra.Command, client backend, id string) (*jobDetail, error) {
	ctx := cmd.Context()
	job, err := client.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	attempts, err := client.Attempts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	events, err := client.Events(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	from, into, err := client.Lineage(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read lineage: %w", err)
	}
	return &jobDetail{job: job, attempts: attempts, events: events, compactedFrom: from, compactedInto: into}, nil
}

// json is the job as JobService.Get shows it, with its history as JobService.Events does.
func (d *jobDetail) json() any {
	h := newHistory(d.events, d.attempts)
	return &struct {
		Job      apiJSON   `json:"job"`
		Attempts []apiJSON `json:"attempts"`
		Events   []apiJSON `json:"events"`
	}{apiJob(d.job), h.Attempts, h.Events}
}

func (d *jobDetail) print(w io.Writer, now time.Time) error {
	j := d.job
	fmt.Fprintf(w, "Job %s\n\n", j.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("state", stateText(j))
	row("kind", j.Kind)
	row("queue", j.Queue)
	row("priority", fmt.Sprint(j.Priority))
	if j.FairnessKey != "" {
		row("fairness key", j.FairnessKey)
	}
	row("attempt", attemptCount(j.Attempt, j.MaxAttempts))
	row("rescues", rescueCount(j.Rescues, j.MaxRescues))
	row("args", string(j.Args))
	if len(j.Headers) > 0 {
		row("headers", formatHeaders(j.Headers))
	}
	row("created", showTime(j.CreatedAt, detailTime))
	row("run at", showTime(j.RunAt, detailTime)+" ("+relative(j.RunAt, now)+")")
	if !j.FinishedAt.IsZero() {
		row("finished", showTime(j.FinishedAt, detailTime))
	}
	row("lease", formatLease(j, now))
	if j.ProgressPercent > 0 || j.ProgressMessage != "" {
		row("progress", strings.TrimSpace(fmt.Sprintf("%d%% %s", j.ProgressPercent, j.ProgressMessage)))
	}
	if len(j.Result) > 0 {
		row("result", string(j.Result))
	}
	if j.LastError != "" {
		row("last error", j.LastError)
	}
	if j.LastErrorCode != "" {
		row("error code", j.LastErrorCode+" (a business error)")
	}
	if len(j.Checkpoint) > 0 {
		row("checkpoint", string(j.Checkpoint))
	}
	if len(j.ResumeData) > 0 {
		row("resume data", string(j.ResumeData))
	}
	if !j.DeadlineAt.IsZero() {
		row("deadline", showTime(j.DeadlineAt, detailTime)+" ("+relative(j.DeadlineAt, now)+")")
	}
	if j.ScheduleID != "" {
		row("schedule", j.ScheduleID)
	}
	if j.WorkflowID != "" {
		row("workflow", fmt.Sprintf("%s, step %s (hopper workflows show %s)", j.WorkflowID, j.Step, j.WorkflowID))
	}
	if j.OriginalID != "" {
		row("replay of", fmt.Sprintf("%s (replay %d, by %s)", j.OriginalID, j.ReplayCount, j.ReplayedBy))
	}
	if len(d.compactedFrom) > 0 {
		row("compacted from", strings.Join(d.compactedFrom, ", "))
	}
	if d.compactedInto != "" {
		row("compacted into", d.compactedInto)
	}
	if !j.ExpiresAt.IsZero() {
		row("expires", showTime(j.ExpiresAt, detailTime)+" ("+relative(j.ExpiresAt, now)+")")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printAttempts(w, d.attempts); err != nil {
		return err
	}
	return printHistory(w, d.events)
}

func formatHeaders(h map[string]string) string {
	parts := make([]string, 0, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		parts = append(parts, k+"="+h[k])
	}
	return strings.Join(parts, ", ")
}

func formatLease(j *hopper.JobRow, now time.Time) string {
	if j.WorkerID == "" {
		if j.Token == 0 {
			return "none"
		}
		return fmt.Sprintf("none (last token %d)", j.Token)
	}
	return fmt.Sprintf("worker %s, expires %s (%s), token %d",
		j.WorkerID, showTime(j.LeaseExpiresAt, detailTime), relative(j.LeaseExpiresAt, now), j.Token)
}
