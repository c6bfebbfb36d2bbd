package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/spf13/cobra"
)

func newKindsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kinds",
		Short: "List job kinds with their job counts; set their caps and rate limits, disable and enable them, compact their queued jobs",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List kinds with their settings and job counts per state",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withBackend(cmd, true, func(client backend) error {
				ks, err := client.Kinds(cmd.Context())
				if err != nil {
					return fmt.Errorf("list kinds: %w", err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), kindsJSON(ks))
				}
				return printKinds(cmd.OutOrStdout(), ks)
			})
		},
	}
	addJSONFlag(ls)
	cmd.AddCommand(ls, newKindsSetCmd(), newKindsCompactCmd(),
		toggleCmd("kind", "disable", "Stop every process and remote worker from starting jobs of KIND; running jobs finish",
			"disabled", backend.DisableKind),
		toggleCmd("kind", "enable", "Let a disabled KIND's jobs start again", "enabled", backend.EnableKind))
	return cmd
}

func newKindsSetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set KIND [--cap N] [--rate N/DURATION] [--cap-per-key N] [--rate-per-key N/DURATION] [--compact-over N [--compact-merge POLICY]]",
		Short: "Set the fleet-wide cap on running jobs of KIND, its rate limit and its compaction (0 removes any)",
		Long: `set changes the settings of KIND that are given, for every process and remote worker.

--cap bounds the kind's running jobs across the fleet (0 removes the cap). --rate bounds its
job starts, in every queue: N/DURATION lets at most N jobs start per DURATION (after a quiet
spell up to N at once, then at the rate; 0 removes the limit); jobs over it wait, queued.
--cap-per-key and --rate-per-key do the same for each fairness key of the kind's jobs
(enqueue --fairness-key), in every queue; jobs without a fairness key are not bound by them.
--compact-over has the leader compact each group of the kind in which more than N jobs wait
(as kinds compact does), every rescue interval, with the merge policy --compact-merge (keep,
the default, replace or append); 0 removes it. See docs/flow-control.md.`,
		Example: `  hopper kinds set render-pdf --cap 4
  hopper kinds set send-sms --rate 10/1s
  hopper kinds set send-sms --rate 0
  hopper kinds set render-pdf --cap-per-key 2 --rate-per-key 10/1s
  hopper kinds set reindex-doc --compact-over 10 --compact-merge append`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := readSettings(cmd)
			if err != nil {
				return err
			}
			return withBackend(cmd, true, func(client backend) error {
				if err := client.SetKind(cmd.Context(), args[0], s.kind()); err != nil {
					return err
				}
				var done []string
				if s.Cap != nil {
					done = append(done, fmt.Sprintf("capped at %d running jobs", *s.Cap))
					if *s.Cap == 0 {
						done[len(done)-1] = "uncapped"
					}
				}
				if s.Rate != nil {
					done = append(done, "rate-limited to "+s.Rate.String())
					if s.Rate.IsZero() {
						done[len(done)-1] = "not rate-limited"
					}
				}
				if s.CapPerKey != nil {
					done = append(done, fmt.Sprintf("capped at %d running jobs per fairness key", *s.CapPerKey))
					if *s.CapPerKey == 0 {
						done[len(done)-1] = "uncapped per fairness key"
					}
				}
				if s.RatePerKey != nil {
					done = append(done, "rate-limited to "+s.RatePerKey.String()+" per fairness key")
					if s.RatePerKey.IsZero() {
						done[len(done)-1] = "not rate-limited per fairness key"
					}
				}
				if c := s.Compaction; c != nil {
					done = append(done, fmt.Sprintf("compacted by the leader over %d waiting jobs per group (%s)", c.Over, mergeName(c.Merge)))
					if c.Over == 0 {
						done[len(done)-1] = "not compacted by the leader"
					}
				}
				for _, d := range done {
					if _, err := fmt.Fprintf(cmd.OutOrStdout(), "kind %s %s\n", args[0], d); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	addSettingsFlags(cmd, false)
	cmd.Flags().Int("compact-over", 0, "have the leader compact each group of KIND in which more than N jobs wait (0 removes it)")
	cmd.Flags().String("compact-merge", "", "the merge policy of the leader's compaction: keep (default), replace or append")
	return cmd
}

// mergeName is a merge policy's name, keep for the default.
func mergeName(p hopper.MergePolicy) string {
	if p == "" {
		return string(hopper.MergeKeep)
	}
	return string(p)
}

func newKindsCompactCmd() *cobra.Command {
	var opts hopper.CompactOpts
	var merge string
	cmd := &cobra.Command{
		Use:   "compact KIND [--group-key KEY] [--over N] [--merge keep|replace|append]",
		Short: "Replace the waiting jobs of each group of KIND by one job",
		Long: `compact replaces, in each group of KIND (its jobs with one group key) in which more than
--over jobs wait, the waiting jobs (queued, never claimed) by one new job. --merge makes the
new job's args: keep (the default) the oldest job's, replace the newest's, append the items
of every job's list (jobs enqueued with --merge append). Each replaced job ends canceled with
the reason "compacted into <new id>"; jobs claimed meanwhile are left alone. A group whose
jobs do not fit the policy is left as it is and listed as refused. See docs/flow-control.md.`,
		Example: `  hopper kinds compact reindex-doc --merge append
  hopper kinds compact send-digest --group-key user-7 --merge replace
  hopper kinds compact send-digest --over 100`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Merge = hopper.MergePolicy(merge)
			return withBackend(cmd, true, func(client backend) error {
				res, err := client.CompactKind(cmd.Context(), args[0], &opts)
				if err != nil {
					return err
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), compactJSON(res))
				}
				return printCompact(cmd.OutOrStdout(), args[0], res)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.GroupKey, "group-key", "", "compact only the group with this key (default: every group of KIND)")
	fl.IntVar(&opts.Over, "over", 0, "compact a group only when more than N of its jobs wait (default: two or more)")
	fl.StringVar(&merge, "merge", "", "the new job's args: keep (the oldest's; default), replace (the newest's) or append (every job's list items, oldest first)")
	addJSONFlag(cmd)
	return cmd
}

func printCompact(w io.Writer, kind string, res *hopper.CompactResult) error {
	if _, err := fmt.Fprintf(w, "kind %s: groups compacted: %d, jobs replaced: %d\n", kind, res.Groups, res.Jobs); err != nil {
		return err
	}
	for _, g := range res.Compacted {
		if _, err := fmt.Fprintf(w, "  group %s: replaced by %s: %s\n", g.GroupKey, g.NewJobID, strings.Join(g.Replaced, ", ")); err != nil {
			return err
		}
	}
	for _, g := range res.Refused {
		if _, err := fmt.Fprintf(w, "  group %s refused: job %s: %s\n", g.GroupKey, g.JobID, g.Reason); err != nil {
			return err
		}
	}
	return nil
}

type compactedGroupJSON struct {
	GroupKey string   `json:"group_key"`
	NewJobID string   `json:"new_job_id"`
	Replaced []string `json:"replaced"`
}

type refusedGroupJSON struct {
	GroupKey string `json:"group_key"`
	JobID    string `json:"job_id"`
	Reason   string `json:"reason"`
}

func compactJSON(res *hopper.CompactResult) any {
	out := struct {
		Groups    int                  `json:"groups"`
		Jobs      int                  `json:"jobs"`
		Compacted []compactedGroupJSON `json:"compacted"`
		Refused   []refusedGroupJSON   `json:"refused"`
	}{Groups: res.Groups, Jobs: res.Jobs, Compacted: []compactedGroupJSON{}, Refused: []refusedGroupJSON{}}
	for _, g := range res.Compacted {
		out.Compacted = append(out.Compacted, compactedGroupJSON{g.GroupKey, g.NewJobID, g.Replaced})
	}
	for _, g := range res.Refused {
		out.Refused = append(out.Refused, refusedGroupJSON{g.GroupKey, g.JobID, g.Reason})
	}
	return out
}

func printKinds(w io.Writer, ks []*hopper.KindInfo) error {
	if len(ks) == 0 {
		_, err := fmt.Fprintln(w, "no kinds")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "KIND\tDISABLED\tCAP\tRATE\tCAP/KEY\tRATE/KEY\tCOMPACT")
	for _, s := range queueStates {
		fmt.Fprintf(tw, "\t%s", stateHeader(s))
	}
	fmt.Fprintln(tw)
	for _, k := range ks {
		disabled, limit := "no", "-"
		if k.Disabled {
			disabled = "yes"
		}
		if k.MaxRunning > 0 {
			limit = fmt.Sprint(k.MaxRunning)
		}
		compact := "-"
		if k.Compaction.Over > 0 {
			compact = fmt.Sprintf(">%d %s", k.Compaction.Over, mergeName(k.Compaction.Merge))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s", k.Name, disabled, limit, rateCell(k.Rate), capCell(k.CapPerKey),
			rateCell(k.RatePerKey), compact)
		for _, s := range queueStates {
			fmt.Fprintf(tw, "\t%d", k.Counts[s])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

type kindJSON struct {
	Name       string `json:"name"`
	Disabled   bool   `json:"disabled"`
	MaxRunning int    `json:"max_running,omitempty"`
	Rate       string `json:"rate,omitempty"` // N/DURATION
	// CapPerKey and RatePerKey are the limits per fairness key, when set.
	CapPerKey  int    `json:"cap_per_key,omitempty"`
	RatePerKey string `json:"rate_per_key,omitempty"`
	// CompactOver and CompactMerge are the leader's compaction, when set.
	CompactOver  int              `json:"compact_over,omitempty"`
	CompactMerge string           `json:"compact_merge,omitempty"`
	Counts       map[string]int64 `json:"counts"`
}

func kindsJSON(ks []*hopper.KindInfo) any {
	out := make([]kindJSON, len(ks))
	for i, k := range ks {
		out[i] = kindJSON{Name: k.Name, Disabled: k.Disabled, MaxRunning: k.MaxRunning, Rate: apiview.Rate(k.Rate),
			Counts: stateCountsJSON(k.Counts), CapPerKey: k.CapPerKey, RatePerKey: apiview.Rate(k.RatePerKey)}
		if k.Compaction.Over > 0 {
			out[i].CompactOver, out[i].CompactMerge = k.Compaction.Over, mergeName(k.Compaction.Merge)
		}
	}
	return struct {
		Kinds []kindJSON `json:"kinds"`
	}{out}
}
