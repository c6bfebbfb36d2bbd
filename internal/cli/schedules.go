package cli

import (
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/schedule"
	"github.com/spf13/cobra"
)

// maxPreview bounds `schedules preview -n`.
const maxPreview = 1000

func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Work with recurring schedules; preview a spec's fire times",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	cmd.AddCommand(newSchedulesPreviewCmd())
	return cmd
}

func newSchedulesPreviewCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preview --cron SPEC [--tz ZONE] [--from TIME] [-n N]",
		Short: "Print the next fire times of a schedule spec, without touching any database",
		Long: `preview prints the next N fire times of SPEC after --from, one per line in RFC 3339
with the offset of the schedule's time zone, or as a JSON array of strings with --json. It
reads no database, so a spec can be checked before it is saved.

SPEC is a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (a
leading seconds field), a descriptor (@yearly, @monthly, @weekly, @daily, @hourly) or
"@every DURATION". Wall-clock times skipped by a DST change fire at the first instant after
the jump; times repeated by one fire once, on their first occurrence (docs/schedules.md).`,
		Example: `  hopper schedules preview --cron '30 2 * * *' --tz America/New_York --from 2026-03-07T00:00:00Z -n 3`,
		Args:    cobra.NoArgs,
		RunE:    runSchedulesPreview,
	}
	cmd.Flags().String("cron", "", "the schedule spec (required)")
	cmd.Flags().String("tz", "UTC", "IANA time zone the spec is evaluated in")
	cmd.Flags().String("from", "", "list fire times after this RFC 3339 time (default now)")
	cmd.Flags().IntP("count", "n", 10, fmt.Sprintf("how many fire times to print (at most %d)", maxPreview))
	_ = cmd.MarkFlagRequired("cron")
	addJSONFlag(cmd)
	return cmd
}

func runSchedulesPreview(cmd *cobra.Command, _ []string) error {
	flags := cmd.Flags()
	spec, _ := flags.GetString("cron")
	tz, _ := flags.GetString("tz")
	fromText, _ := flags.GetString("from")
	n, _ := flags.GetInt("count")
	s, err := schedule.Parse(spec, tz)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if n < 1 || n > maxPreview {
		return usageErrorf("-n must be between 1 and %d, not %d", maxPreview, n)
	}
	from := time.Now()
	if fromText != "" {
		if from, err = time.Parse(time.RFC3339, fromText); err != nil {
			return usageErrorf("--from %q is not an RFC 3339 time such as 2026-03-07T12:00:00Z", fromText)
		}
	}
	out := make([]string, 0, n)
	for t := s.Next(from); !t.IsZero() && len(out) < n; t = s.Next(t) {
		out = append(out, t.Format(time.RFC3339Nano))
	}
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), out)
	}
	for _, line := range out {
		if _, err := fmt.Fprintln(cmd.OutOrStdout(), line); err != nil {
			return err
		}
	}
	return nil
}
