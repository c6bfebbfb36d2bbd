package cli

import (
	"fmt"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

type dlqRetryFlags struct {
	dlqFilterFlags
	yes     bool
	limit   int
	retries int
	reason  string
}

func newDLQRetryCmd() *cobra.Command {
	var f dlqRetryFlags
	cmd := &cobra.Command{
		Use:   "retry --all [filters]",
		Short: "Retry dead letters in place, those matching filters",
		Long: `Retry in place, oldest first, up to --limit dead letters matching the filters: each the same
job back to its queue with --retries more attempts, as 'hopper jobs retry ID' does for one, in
one transaction, each recorded in the audit log. Dead letters that were replayed are skipped
(and counted): retry one of them with 'hopper jobs retry ID --again'. Running it again
continues where it stopped. It asks for confirmation unless --yes is given.`,
		Example: `  hopper dlq retry --all --queue billing --since 1h --retries 2 --yes`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runDLQRetry(cmd, &f) },
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.Bool("all", false, "retry every dead letter matching the filters (bounded by --limit); required")
	fl.IntVar(&f.limit, "limit", hopper.DefaultReplayLimit, fmt.Sprintf("the most jobs to retry, 1 to %d", hopper.MaxReplayLimit))
	fl.IntVar(&f.retries, "retries", hopper.DefaultRetryAttempts, "how many more attempts each job gets, 1 to 1000")
	fl.StringVar(&f.reason, "reason", "bulk retry with the CLI", "recorded in each job's history and the audit log")
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	addJSONFlag(cmd)
	return cmd
}

func runDLQRetry(cmd *cobra.Command, f *dlqRetryFlags) error {
	if all, _ := cmd.Flags().GetBool("all"); !all {
		return usageErrorf("give --all (with filters): to retry one job, use hopper jobs retry ID")
	}
	switch {
	case f.limit < 1 || f.limit > hopper.MaxReplayLimit:
		return usageErrorf("invalid --limit: %d is outside 1–%d", f.limit, hopper.MaxReplayLimit)
	case f.retries < 1 || f.retries > 1000:
		return usageErrorf("invalid --retries: %d is outside 1–1000", f.retries)
	}
	filter, err := f.filter(time.Now())
	if err != nil {
		return err
	}
	if !f.yes {
		if err := confirm(cmd, fmt.Sprintf("Retry in place up to %d dead letters%s that were never replayed? [y/N] ",
			f.limit, describeFilter(filter))); err != nil {
			return err
		}
	}
	return withBackend(cmd, true, func(client backend) error {
		res, err := client.RetryMany(cmd.Context(), filter, hopper.RetryManyOpts{Limit: f.limit, Retries: f.retries,
			Reason: f.reason})
		if err != nil {
			return fmt.Errorf("retry dead letters: %w", err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Jobs    []apiJSON `json:"jobs"`
				Skipped int       `json:"skipped"`
			}{apiJobs(res.Jobs), res.Skipped})
		}
		w := cmd.OutOrStdout()
		for _, j := range res.Jobs {
			fmt.Fprintf(w, "job %s retried in place (attempt %d of %d next)\n", j.ID, j.Attempt+1, j.MaxAttempts)
		}
		_, err = fmt.Fprintf(w, "%d dead letters retried%s\n", len(res.Jobs), skippedNote(res.Skipped))
		return err
	})
}
