package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

func newQueuesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their job counts; pause and resume them",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List queues with their job counts per state",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withBackend(cmd, true, func(client backend) error {
				qs, err := client.Queues(cmd.Context())
				if err != nil {
					return fmt.Errorf("list queues: %w", err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), queuesJSON(qs))
				}
				return printQueues(cmd.OutOrStdout(), qs)
			})
		},
	}
	addJSONFlag(ls)
	cmd.AddCommand(ls, queueToggle("pause", "Stop starting jobs of QUEUE; running jobs finish", true),
		queueToggle("resume", "Let a paused QUEUE's jobs start again", false))
	return cmd
}

func queueToggle(name, short string, pause bool) *cobra.Command {
	return &cobra.Command{
		Use:   name + " QUEUE",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBackend(cmd, true, func(client backend) error {
				op, done := client.ResumeQueue, "resumed"
				if pause {
					op, done = client.PauseQueue, "paused"
				}
				if err := op(cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "queue %s %s\n", args[0], done)
				return err
			})
		},
	}
}

// queueStates are the columns of `queues ls` and `kinds ls`, in lifecycle order.
var queueStates = []hopper.JobState{hopper.StateScheduled, hopper.StateQueued, hopper.StateRunning,
	hopper.StateSuspended, hopper.StateCompleted, hopper.StateFailed, hopper.StateCanceled}

func printQueues(w io.Writer, qs []*hopper.QueueInfo) error {
	if len(qs) == 0 {
		_, err := fmt.Fprintln(w, "no queues")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "QUEUE\tPAUSED\tCAP")
	for _, s := range queueStates {
		fmt.Fprintf(tw, "\t%s", s)
		if s == hopper.StateQueued {
			fmt.Fprint(tw, "\t(disabled)")
		}
	}
	fmt.Fprintln(tw)
	for _, q := range qs {
		paused, limit := "no", "-"
		if q.Paused {
			paused = "yes"
		}
		if q.MaxRunning > 0 {
			limit = fmt.Sprint(q.MaxRunning)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s", q.Name, paused, limit)
		for _, s := range queueStates {
			fmt.Fprintf(tw, "\t%d", q.Counts[s])
			if s == hopper.StateQueued {
				fmt.Fprintf(tw, "\t%d", q.Disabled)
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

type queueJSON struct {
	Name       string           `json:"name"`
	Paused     bool             `json:"paused"`
	MaxRunning int              `json:"max_running,omitempty"`
	Counts     map[string]int64 `json:"counts"`
	Disabled   int64            `json:"disabled"`
}

func queuesJSON(qs []*hopper.QueueInfo) any {
	out := make([]queueJSON, len(qs))
	for i, q := range qs {
		out[i] = queueJSON{Name: q.Name, Paused: q.Paused, MaxRunning: q.MaxRunning, Counts: stateCountsJSON(q.Counts),
			Disabled: q.Disabled}
	}
	return struct {
		Queues []queueJSON `json:"queues"`
	}{out}
}

// stateCountsJSON is a job count for every state, 0 for the states without jobs.
func stateCountsJSON(counts map[hopper.JobState]int64) map[string]int64 {
	out := make(map[string]int64, len(queueStates))
	for _, s := range queueStates {
		out[string(s)] = counts[s]
	}
	return out
}
