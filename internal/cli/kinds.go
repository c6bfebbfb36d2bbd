package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/spf13/cobra"
)

func newKindsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kinds",
		Short: "List job kinds with their job counts; set their caps and rate limits, disable and enable them",
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
	cmd.AddCommand(ls, newKindsSetCmd(),
		toggleCmd("kind", "disable", "Stop every process and remote worker from starting jobs of KIND; running jobs finish",
			"disabled", backend.DisableKind),
		toggleCmd("kind", "enable", "Let a disabled KIND's jobs start again", "enabled", backend.EnableKind))
	return cmd
}

func newKindsSetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set KIND [--cap N] [--rate N/DURATION]",
		Short: "Set the fleet-wide cap on running jobs of KIND and its rate limit (0 removes either)",
		Long: `set changes the settings of KIND that are given, for every process and remote worker.

--cap bounds the kind's running jobs across the fleet (0 removes the cap). --rate bounds its
job starts, in every queue: N/DURATION lets at most N jobs start per DURATION (after a quiet
spell up to N at once, then at the rate; 0 removes the limit); jobs over it wait, queued. See
docs/flow-control.md.`,
		Example: `  hopper kinds set render-pdf --cap 4
  hopper kinds set send-sms --rate 10/1s
  hopper kinds set send-sms --rate 0`,
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
	return cmd
}

func printKinds(w io.Writer, ks []*hopper.KindInfo) error {
	if len(ks) == 0 {
		_, err := fmt.Fprintln(w, "no kinds")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "KIND\tDISABLED\tCAP\tRATE")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s", k.Name, disabled, limit, rateCell(k.Rate))
		for _, s := range queueStates {
			fmt.Fprintf(tw, "\t%d", k.Counts[s])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

type kindJSON struct {
	Name       string           `json:"name"`
	Disabled   bool             `json:"disabled"`
	MaxRunning int              `json:"max_running,omitempty"`
	Rate       string           `json:"rate,omitempty"` // N/DURATION
	Counts     map[string]int64 `json:"counts"`
}

func kindsJSON(ks []*hopper.KindInfo) any {
	out := make([]kindJSON, len(ks))
	for i, k := range ks {
		out[i] = kindJSON{Name: k.Name, Disabled: k.Disabled, MaxRunning: k.MaxRunning, Rate: apiview.Rate(k.Rate),
			Counts: stateCountsJSON(k.Counts)}
	}
	return struct {
		Kinds []kindJSON `json:"kinds"`
	}{out}
}
