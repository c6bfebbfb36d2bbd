package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

func newJobsResumeCmd() *cobra.Command {
	var data, reason string
	cmd := &cobra.Command{
		Use:     "resume ID [--data JSON]",
		Short:   "Resume a suspended job: back to its queue, with data for its next attempt",
		Example: `  hopper jobs resume 01a2… --data '{"approved": true}'`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var raw any // none without --data
			if data != "" {
				if !json.Valid([]byte(data)) {
					return usageErrorf("invalid --data: not valid JSON")
				}
				raw = json.RawMessage(data)
			}
			return withBackend(cmd, true, func(client backend) error {
				job, err := client.Resume(cmd.Context(), id, raw, reason)
				if errors.Is(err, hopper.ErrInvalidTransition) {
					msg := fmt.Sprintf("job %s cannot be resumed: it is not suspended", id)
					if cur, gerr := client.Get(cmd.Context(), id); gerr == nil {
						msg = fmt.Sprintf("job %s cannot be resumed: it is %s, not suspended", id, cur.State)
					}
					return &exitError{code: ExitConflict, msg: msg, err: err}
				}
				if err != nil {
					return notFound(id, err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), &struct {
						Job apiJSON `json:"job"`
					}{apiJob(job)})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "job %s resumed\n", id)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "JSON handed to the next attempt as its resume data")
	cmd.Flags().StringVar(&reason, "reason", "resumed with the CLI", "recorded in the job's history")
	addJSONFlag(cmd)
	return cmd
}
