package cli

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

func newJobsCancelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job that has not ended",
		Long: `Cancel a scheduled, queued, running or suspended job. On PostgreSQL the process
running the job hears of it at once (LISTEN/NOTIFY) and cancels the handler's context; on
SQLite, or with PollOnly, a worker in another process sees it at its next lease renewal.`,
		Args: cobra.ExactArgs(1),
		RunE: runJobsCancel,
	}
	addJSONFlag(cmd)
	return cmd
}

func runJobsCancel(cmd *cobra.Command, args []string) error {
	id := args[0]
	return withBackend(cmd, true, func(client backend) error {
		job, err := client.Cancel(cmd.Context(), id, "canceled with the CLI")
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
