package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newJobsEventsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Show a job's history: every state transition and every attempt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return withBackend(cmd, true, func(client backend) error {
				events, err := client.Events(cmd.Context(), id)
				if err != nil {
					return notFound(id, err)
				}
				attempts, err := client.Attempts(cmd.Context(), id)
				if err != nil {
					return notFound(id, err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), newHistory(events, attempts))
				}
				w := cmd.OutOrStdout()
				fmt.Fprintln(w, "History")
				if err := printHistory(w, events); err != nil {
					return err
				}
				fmt.Fprintln(w, "\nAttempts")
				return printAttempts(w, attempts)
			})
		},
	}
	addJSONFlag(cmd)
	return cmd
}
