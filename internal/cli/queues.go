package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apiview"
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
		Long: `ls lists every queue that has jobs or settings: whether it is paused, its stored weight
and cap, its jobs per state, what it is computing (its running jobs) and what awaits compute
(its queued jobs: ready, no worker on them yet), and whether every live worker of the queue
is held back by its resource governor (HELD; see docs/flow-control.md#awaiting-compute).`,
		Args: cobra.NoArgs,
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
	cmd.AddCommand(ls, toggleCmd("queue", "pause", "Stop starting jobs of QUEUE; running jobs finish", "paused", backend.PauseQueue),
		toggleCmd("queue", "resume", "Let a paused QUEUE's jobs start again", "resumed", backend.ResumeQueue), newQueueSetCmd())
	return cmd
}

func newQueueSetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set QUEUE",
		Short: "Set QUEUE's fair-share weight, fleet-wide cap on running jobs and rate limit, those per fairness key, and key weights",
		Long: `set changes the settings of QUEUE that are given, for every process that works it.

--key-weight KEY=W (repeatable) gives fairness key KEY of the queue W turns for each turn of
a key of weight 1 when several keys have jobs ready (1–1000; 0 or 1 removes it: every key has
weight 1 by default); queues ls --json shows them (docs/flow-control.md#weights-per-key).

--weight is the queue's share of a process's workers when queues compete for them: a queue
with work gets weight / (sum of the weights of the queues with work) of them (1–1000; 0 removes
the stored weight, and each process goes back to its configured one, default 1). --cap bounds
the queue's running jobs across the fleet (0 removes the cap). --rate bounds its job starts
across the fleet: N/DURATION lets at most N jobs start per DURATION (after a quiet spell up to
N at once, then at the rate; 0 removes the limit); jobs over it wait, queued.
--cap-per-key and --rate-per-key do the same for each fairness key of the queue's jobs
(enqueue --fairness-key); jobs without a fairness key are not bound by them. See
docs/flow-control.md.`,
		Example: `  hopper queues set reports --weight 3
  hopper queues set exports --key-weight customer-42=3 --key-weight customer-7=2
  hopper queues set emails --cap 20 --rate 100/1s
  hopper queues set emails --rate 0
  hopper queues set emails --cap-per-key 2 --rate-per-key 10/1s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := readSettings(cmd)
			if err != nil {
				return err
			}
			return withBackend(cmd, false, func(client backend) error {
				if err := client.SetQueue(cmd.Context(), args[0], s.queue()); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "queue %s set\n", args[0])
				return err
			})
		},
	}
	addSettingsFlags(cmd, true)
	return cmd
}

// toggleCmd is a command that switches one setting of the queue or kind it names (noun):
// op on the backend, then "<noun> NAME <done>".
func toggleCmd(noun, name, short, done string, op func(backend, context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   name + " " + strings.ToUpper(noun),
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBackend(cmd, true, func(client backend) error {
				if err := op(client, cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", noun, args[0], done)
				return err
			})
		},
	}
}

// queueStates are the columns of `queues ls` and `kinds ls`, in lifecycle order.
// stateHeader is the header of a table's column of jobs in state s: its name in upper case, as
// every header is (one word each, so that columns split on blanks).
func stateHeader(s hopper.JobState) string { return strings.ToUpper(string(s)) }

var queueStates = []hopper.JobState{hopper.StateWaiting, hopper.StateScheduled, hopper.StateQueued, hopper.StateRunning,
	hopper.StateSuspended, hopper.StateCompleted, hopper.StateFailed, hopper.StateCanceled}

func printQueues(w io.Writer, qs []*hopper.QueueInfo) error {
	if len(qs) == 0 {
		_, err := fmt.Fprintln(w, "no queues")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "QUEUE\tPAUSED\tWEIGHT\tCAP\tRATE\tCAP/KEY\tRATE/KEY")
	for _, s := range queueStates {
		fmt.Fprintf(tw, "\t%s", stateHeader(s))
		if s == hopper.StateQueued {
			fmt.Fprint(tw, "\tQUEUED_DISABLED")
		}
	}
	fmt.Fprintln(tw, "\tCOMPUTING\tAWAITING_COMPUTE\tHELD")
	for _, q := range qs {
		paused, weight, limit := "no", "-", "-"
		if q.Paused {
			paused = "yes"
		}
		if q.Weight > 0 {
			weight = fmt.Sprint(q.Weight)
		}
		if q.MaxRunning > 0 {
			limit = fmt.Sprint(q.MaxRunning)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", q.Name, paused, weight, limit, rateCell(q.Rate), capCell(q.CapPerKey),
			rateCell(q.RatePerKey))
		for _, s := range queueStates {
			fmt.Fprintf(tw, "\t%d", q.Counts[s])
			if s == hopper.StateQueued {
				fmt.Fprintf(tw, "\t%d", q.Disabled)
			}
		}
		held := "no"
		if q.HeldByGovernor {
			held = "yes"
		}
		fmt.Fprintf(tw, "\t%d\t%d\t%s\n", q.Computing, q.AwaitingCompute, held)
	}
	return tw.Flush()
}

type queueJSON struct {
	Name       string `json:"name"`
	Paused     bool   `json:"paused"`
	Weight     int    `json:"weight,omitempty"`
	MaxRunning int    `json:"max_running,omitempty"`
	Rate       string `json:"rate,omitempty"` // N/DURATION
	// CapPerKey and RatePerKey are the limits per fairness key, when set.
	CapPerKey  int              `json:"cap_per_key,omitempty"`
	RatePerKey string           `json:"rate_per_key,omitempty"`
	Counts     map[string]int64 `json:"counts"`
	// Computing: running jobs; AwaitingCompute: queued jobs (ready, no worker on them yet);
	// HeldByGovernor: every live worker of the queue is held by its resource governor.
	Computing       int64 `json:"computing"`
	AwaitingCompute int64 `json:"awaiting_compute"`
	HeldByGovernor  bool  `json:"held_by_governor"`
	Disabled        int64 `json:"disabled"`
	// KeyWeights: the stored weights of the queue's fairness keys (others have weight 1).
	KeyWeights map[string]int `json:"key_weights,omitempty"`
}

func queuesJSON(qs []*hopper.QueueInfo) any {
	out := make([]queueJSON, len(qs))
	for i, q := range qs {
		out[i] = queueJSON{Name: q.Name, Paused: q.Paused, Weight: q.Weight, MaxRunning: q.MaxRunning,
			Rate: apiview.Rate(q.Rate), Counts: stateCountsJSON(q.Counts), Computing: q.Computing, AwaitingCompute: q.AwaitingCompute,
			HeldByGovernor: q.HeldByGovernor, Disabled: q.Disabled, CapPerKey: q.CapPerKey, RatePerKey: apiview.Rate(q.RatePerKey),
			KeyWeights: q.KeyWeights}
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

// capCell is a cap in a table: N, "-" for none.
func capCell(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// rateCell is a rate limit in a table: N/DURATION, "-" for none.
func rateCell(r hopper.Rate) string {
	if r.IsZero() {
		return "-"
	}
	return apiview.Rate(r)
}
