package cli

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

func newJobsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, show, cancel and retry jobs and show their history",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	cmd.AddCommand(newJobsLsCmd(), newJobsShowCmd(), newJobsCancelCmd(), newJobsEventsCmd(), newJobsResumeCmd(),
		newJobsRetryCmd(), newJobsSetRetriesCmd())
	return cmd
}

// notFound turns a store's not-found error for job id into the CLI's message.
func notFound(id string, err error) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &exitError{code: ExitNotFound, msg: fmt.Sprintf("job %s not found", id), err: err}
	}
	return err
}

// groupRunE runs for a command group given no known subcommand: help without arguments, a
// usage error (exit 2) for an unknown subcommand.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
}
