package cli

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

func newJobsCancelCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel ID [--reason TEXT]",
		Short: "Cancel a job that has not ended",
		Long: `Cancel a scheduled, queued, running or suspended job. The job's history records the
cancel as done by an operator, with --reason. On PostgreSQL the process running the job hears
of it at once (LISTEN/NOTIFY) and cancels the handler's context; on SQLite, or with PollOnly, a
worker in another process sees it at its next lease renewal.`,
		Example: `  hopper jobs cancel 01a2… --reason "customer asked to stop"`,
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runJobsCancel(cmd, args[0], reason) },
	}
	cmd.Flags().StringVar(&reason, "reason", "canceled with the CLI", "recorded in the job's history")
	addJSONFlag(cmd)
	return cmd
}

func runJobsCancel(cmd *cobra.Command, id, reason string) error {
	return withBackend(cmd, true, func(client backend) error {
		job, err := client.Cancel(cmd.Context(), id, reason)
		if errors.Is(err, hopper.ErrInvalidTransition) {
			return alreadyEnded(cmd, client, id, err)
		}
		if err != nil {
			return notFound(id, err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Job apiJSON `json:"job"`
			}{apiJob(job)})
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "job %s canceled\n", id)
		return err
	})
}

// alreadyEnded explains a refused cancel with the job's current state.
func alreadyEnded(cmd *cobra.Command, client backend, id string, err error) error {
	msg := fmt.Sprintf("job %s cannot be canceled: it has already ended", id)
	if job, gerr := client.Get(cmd.Context(), id); gerr == nil {
		msg = fmt.Sprintf("job %s cannot be canceled: it is already %s", id, job.State)
	}
	return &exitError{code: ExitConflict, msg: msg, err: err}
}
