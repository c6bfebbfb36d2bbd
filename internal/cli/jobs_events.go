package cli

import (
	"bytes"

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
				// Each section starts with a blank line, as under jobs show's job: not at the top.
				var out bytes.Buffer
				if err := printHistory(&out, events); err != nil {
					return err
				}
				if err := printAttempts(&out, attempts); err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(bytes.TrimPrefix(out.Bytes(), []byte("\n")))
				return err
			})
		},
	}
	addJSONFlag(cmd)
	return cmd
}
