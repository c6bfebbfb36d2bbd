package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/internal/bench"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addSoakFlags adds the flags of --scenario soak.
func addSoakFlags(f *pflag.FlagSet, soak *bench.SoakConfig) {
	f.DurationVar(&soak.Duration, "duration", bench.DefaultSoakDuration, "--scenario soak: how long the load runs; --scenario tenants: how long the quiet tenants enqueue (default 30s)")
	f.DurationVar(&soak.Interval, "soak-interval", bench.DefaultSoakInterval, "--scenario soak: the time one row of the table covers")
	f.DurationVar(&soak.ResultTTL, "result-ttl", bench.DefaultSoakResultTTL, "--scenario soak: how long completed jobs are kept")
	f.DurationVar(&soak.SweepInterval, "sweep-interval", 0, "--scenario soak: how often the leader sweeps expired jobs (default the client's, 1m)")
	f.DurationVar(&soak.Vacuum, "vacuum-every", 0, "--scenario soak on PostgreSQL: VACUUM (ANALYZE) the soak's tables this often, for a server whose autovacuum is off (default never)")
	f.StringVar(&soak.ProfileDir, "profile-dir", "", "--scenario soak: write heap and goroutine profiles here after the warm-up and at the end")
}

// checkSoakFlags refuses bad values of the soak's flags, whatever the scenario: a duration
// given as 0 is refused rather than taken for the default. The tenants scenario takes only
// --duration of them.
func checkSoakFlags(cmd *cobra.Command, scenario string, soak bench.SoakConfig) error {
	for _, name := range []string{"duration", "soak-interval"} {
		if d, _ := cmd.Flags().GetDuration(name); cmd.Flags().Changed(name) && d <= 0 {
			return usageErrorf("--%s %s must be positive", name, d)
		}
	}
	if scenario == "tenants" {
		return nil
	}
	if err := soak.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// printSoak runs the soak scenario with cfg's store settings and prints its rows as they come,
// then the verdicts.
func printSoak(cmd *cobra.Command, cfg bench.Config, soak bench.SoakConfig, asJSON bool) error {
	soak.Database, soak.Synchronous, soak.Conns, soak.Workers = cfg.Database, cfg.Synchronous, cfg.Conns, cfg.Workers
	if cmd.Flags().Changed("rate") {
		soak.Rate = cfg.Rate // 0 measures, as when --rate is not given
	}
	out := cmd.OutOrStdout()
	if !asJSON {
		if soak.Rate == 0 {
			fmt.Fprintln(out, "rate             not given: measuring the maximum throughput first (20,000 jobs), to run at half of it")
		}
		header := true
		soak.OnRow = func(r bench.SoakRow) {
			if header {
				printSoakHeader(out)
				header = false
			}
			printSoakRow(out, r)
		}
	}
	res, err := bench.Soak(cmd.Context(), soak)
	if err != nil {
		return err
	}
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	printSoakSummary(out, res)
	return nil
}

const soakColumns = "%4s %7s %7s %5s %5s %7s %7s %7s %7s %7s %7s %7s %5s %7s %7s %8s %7s %8s %7s %5s\n"

func printSoakHeader(out io.Writer) {
	fmt.Fprintf(out, soakColumns, "row", "enq", "done", "fail", "retry", "p50 ms", "p99 ms", "claim99", "in swp",
		"sweep", "swept", "RSS MB", "gor", "heap MB", "live MB", "db MB", "wal MB", "rows", "vacuum", "load")
}

func printSoakRow(out io.Writer, r bench.SoakRow) {
	rss := "-"
	if r.RSSBytes > 0 {
		rss = mb(r.RSSBytes)
	}
	fmt.Fprintf(out, soakColumns, fmt.Sprint(r.Row), fmt.Sprint(r.Enqueued), fmt.Sprint(r.Completed), fmt.Sprint(r.Failed),
		fmt.Sprint(r.Retried), f2(r.LatencyP50Ms), f2(r.LatencyP99Ms), f2(r.ClaimP99Ms), f2(r.ClaimInSweepP99),
		f2(r.SweepMaxMs), fmt.Sprint(r.Swept), rss, fmt.Sprint(r.GoroutinesMin), mb(r.HeapInuseBytes), mb(r.HeapLiveBytes), mb(r.DBBytes),
		mb(r.WALBytes), fmt.Sprint(r.JobsRows), f2(r.VacuumMs), fmt.Sprintf("%.1f", r.Load1))
}

func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

func mb(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f", float64(n)/(1<<20))
}

func printSoakSummary(out io.Writer, res *bench.SoakResult) {
	s := res.Summary
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)).Round(time.Millisecond) }
	fmt.Fprintf(out, "\nstore            %s (%s), %d CPUs, %s\n", s.Store, s.Durability, s.CPUs, s.GoVersion)
	rate := fmt.Sprintf("%d enqueues/s", s.Rate)
	if s.MeasuredMax > 0 {
		rate += fmt.Sprintf(" (half the measured maximum of %.0f jobs/s)", s.MeasuredMax)
	}
	fmt.Fprintf(out, "load             %s for %s, %d workers; 1 job in %d fails its first attempt\n",
		rate, sec(s.DurationSec), s.Workers, s.FailEvery)
	fmt.Fprintf(out, "results          kept %s, swept every %s; rows every %s\n", sec(s.ResultTTLSec), sec(s.SweepSec), sec(s.IntervalSec))
	fmt.Fprintf(out, "wal MB           %s\n", s.WriteCounter)
	switch {
	case s.Autovacuum == "off" && s.VacuumSec > 0:
		fmt.Fprintf(out, "vacuum           the server's autovacuum is off: the soak vacuumed its tables every %s (vacuum: ms spent per row)\n", sec(s.VacuumSec))
	case s.Autovacuum == "off":
		fmt.Fprintln(out, "vacuum           the server's autovacuum is off and nothing vacuumed: dead rows stayed (see --vacuum-every)")
	case s.VacuumSec > 0:
		fmt.Fprintf(out, "vacuum           autovacuum %s, and the soak vacuumed its tables every %s\n", s.Autovacuum, sec(s.VacuumSec))
	}
	fmt.Fprintf(out, "totals           enqueued %d, completed %d, failed %d, retried %d, swept %d, enqueue errors %d\n",
		s.Enqueued, s.Completed, s.Failed, s.Retried, s.Swept, s.EnqueueErrs)
	target := "met"
	if s.ClaimP99Max > 20 {
		target = "not met"
	}
	fmt.Fprintf(out, "claims           p99 at most %.2f ms in any row (issue 13: ≤ 20 ms, %s); longest sweep window %.1f ms\n",
		s.ClaimP99Max, target, s.SweepMaxMs)
	if len(s.Verdicts) == 0 {
		fmt.Fprintln(out, "verdicts         none: fewer than two rows")
		return
	}
	n, first, last := len(res.Rows), s.WarmupRows+1, s.WarmupRows+s.Compared
	fmt.Fprintf(out, "verdicts         mean of %s against %s", rowSpan(first, last), rowSpan(n-s.Compared+1, n))
	if s.WarmupRows > 0 {
		fmt.Fprintf(out, " (%s: warm-up, nothing is swept before the result TTL and a sweep)", rowSpan(1, s.WarmupRows))
	}
	fmt.Fprintln(out)
	for _, v := range s.Verdicts {
		first, last, unit := v.First, v.Last, ""
		if strings.HasSuffix(v.Series, "_bytes") {
			first, last, unit = first/(1<<20), last/(1<<20), " MB"
		}
		fmt.Fprintf(out, "  %-18s %10.2f → %10.2f%-3s  %s\n", v.Series, first, last, unit, v.Text)
	}
}

// rowSpan names rows from to to: "row 3" or "rows 3–7".
func rowSpan(from, to int) string {
	if from == to {
		return fmt.Sprintf("row %d", from)
	}
	return fmt.Sprintf("rows %d–%d", from, to)
}
