package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/spf13/cobra"
)

type lsFlags struct {
	states, queues, kinds, errorCodes []string
	fairnessKeys                      []string
	limit                             int
	cursor, since, until              string
}

func newJobsLsCmd() *cobra.Command {
	var f lsFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List jobs, newest first",
		Example: `  hopper jobs ls --state failed,canceled --since 1h
  hopper jobs ls --kind send-invoice --limit 10 --json
  hopper jobs ls --error-code card_declined`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runJobsLs(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only jobs in these states (repeatable or comma-separated)")
	fl.StringSliceVar(&f.queues, "queue", nil, "only jobs in these queues")
	fl.StringSliceVar(&f.kinds, "kind", nil, "only jobs of these kinds")
	fl.StringSliceVar(&f.errorCodes, "error-code", nil, "only jobs whose last attempt failed with these business error codes")
	fl.StringArrayVar(&f.fairnessKeys, "fairness-key", nil, "only jobs of this fairness key (repeatable; a key may hold commas)")
	fl.IntVar(&f.limit, "limit", 50, "page size, 1 to 10000")
	fl.StringVar(&f.cursor, "cursor", "", "continue from a previous page's next cursor")
	fl.StringVar(&f.since, "since", "", "only jobs created at or after this time (RFC 3339, or a duration ago like 1h)")
	fl.StringVar(&f.until, "until", "", "only jobs created before this time (RFC 3339, or a duration ago)")
	addJSONFlag(cmd)
	return cmd
}

func runJobsLs(cmd *cobra.Command, f *lsFlags) error {
	params, err := f.listParams(time.Now())
	if err != nil {
		return err
	}
	return withBackend(cmd, true, func(client backend) error {
		res, err := client.List(cmd.Context(), params)
		if err != nil {
			return fmt.Errorf("list jobs: %w", err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), jobsPage{apiJobs(res.Jobs), res.NextCursor})
		}
		return printJobTable(cmd.OutOrStdout(), res)
	})
}

func (f *lsFlags) listParams(now time.Time) (*hopper.ListParams, error) {
	if f.limit < 1 || f.limit > 10000 {
		return nil, usageErrorf("invalid --limit: %d is outside 1–10000", f.limit)
	}
	p := &hopper.ListParams{Queues: f.queues, Kinds: f.kinds, ErrorCodes: f.errorCodes, Cursor: f.cursor, Limit: f.limit,
		FairnessKeys: f.fairnessKeys}
	for _, s := range f.states {
		state, err := hoppertype.ParseState(s)
		if err != nil {
			return nil, usageErrorf("invalid --state: %v", err)
		}
		p.States = append(p.States, state)
	}
	var err error
	if f.since != "" {
		if p.CreatedAfter, err = parseSince("since", f.since, now); err != nil {
			return nil, err
		}
	}
	if f.until != "" {
		if p.CreatedBefore, err = parseSince("until", f.until, now); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func printJobTable(w io.Writer, res *hopper.ListResult) error {
	if len(res.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "no jobs")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tQUEUE\tSTATE\tATTEMPT\tCREATED\tRUN_AT\tLAST_ERROR")
	for _, j := range res.Jobs {
		lastError := oneLine(j.LastError, 60)
		if lastError == "" {
			lastError = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Kind, j.Queue, stateCell(j),
			attemptCount(j.Attempt, j.MaxAttempts), showTime(j.CreatedAt, tableTime), showTime(j.RunAt, tableTime), lastError)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.NextCursor != "" {
		_, err := fmt.Fprintf(w, "\nmore jobs: --cursor %s\n", res.NextCursor)
		return err
	}
	return nil
}
