package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/bench"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	var cfg bench.Config
	var asJSON bool
	var cpuProfile string
	var compare, pin bool
	var scenario, kindRate string
	var soak bench.SoakConfig
	var groups int
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure enqueue rate, throughput and enqueue→start latency with no-op jobs",
		Long: `bench enqueues --jobs no-op jobs in batches, works them with --workers workers and
reports the enqueue rate and the throughput (all outcomes durable); --work makes each job
take that long (its handler sleeps) instead of nothing. Then it enqueues
--latency-jobs jobs one by one at --rate per second and reports the enqueue→start latency.
It uses a fresh SQLite file in a temporary directory unless --bench-db is given, or, with
--database postgres://…, a fresh schema on that server, dropped afterwards. With --server URL
it measures that running server through its API instead: jobs are enqueued over RPC and
worked by a remote worker in this process (--mode stream or poll); they go to a fresh queue
bench-<random> and stay in the server's database. With --compare-remote it measures the same
workload three times on fresh stores of the same kind: in process, then through a server it
starts on a loopback port, worked by a remote worker in stream mode and in poll mode, and
prints each throughput with its ratio to the in-process one.

--scenario fairness measures weighted fair share between queues in process instead: queue
flood holds a backlog of --jobs (default 200,000) no-op jobs while queue trickle receives
--rate (default 100) jobs a second, --latency-jobs of them, worked with --workers (default 20)
slots; it reports the trickle jobs' enqueue→start latency (weights 1:1), then the share of
starts each queue gets with both backlogged, at weights 1:1 and 3:1 (docs/flow-control.md).

--scenario batch measures batch workers in process: --jobs (default 100,000, a multiple of
100) grouped no-op jobs in groups of 100, the groups interleaved, worked through a batch worker
(hopper.AddBatchWorker, batches of up to 100) and then, on a fresh store, the same jobs one by
one (hopper.AddWorker), with --workers slots, for at most a minute (a group's jobs then run
one at a time); it reports the jobs per second of each and their ratio (docs/workers.md,
"Batches").

--scenario tenants measures fairness between tenants inside one queue (fairness keys): one
tenant has a backlog of --jobs (default 100,000) no-op jobs while nine quiet tenants enqueue one
job a second each for --duration (default 30s), worked by --workers (default 20) slots. It runs
three times on fresh stores: with the flood, without it, and with the flood but no fairness keys
(first in, first out), and reports the quiet jobs' enqueue→start latency of each and the
flood's p50 and p99 over the run's without it.

--scenario compaction queues --jobs (default 100,000) grouped no-op jobs in --groups (default
1,000) groups, then compacts the kind on demand (Client.CompactKind, as hopper kinds compact
does) and reports the call's time, the rows it wrote and how long enqueues of another kind,
made every 10 ms meanwhile, waited.

--scenario retained --rows N fills the store (SQLite, or PostgreSQL with --database) with N
finished jobs and their history before the standard benchmark, as a store that has run for a
day holds them: 97 % completed (3 % of them after a retry), 2 % failed after three attempts,
1 % canceled, all within their retention, then walks them once as the leader's sweep does
(saving their windows as settled). It reports the fill's time (the walk's apart) and the
database's size beside the usual figures; --rows 0 runs the same steps on the empty store,
the baseline.

--scenario horizon (PostgreSQL only) holds a REPEATABLE READ snapshot open on another
connection for the whole run, so PostgreSQL can remove no row version the run leaves behind,
while --jobs (default 500,000) jobs are enqueued and worked, then the latency phase runs. It
reports the throughput, the time of the store's claim calls (p50, p99, max), the latency and
the jobs table's dead row versions at the end; --pin=false runs it without the snapshot, the
baseline.

--scenario soak holds a steady load for --duration (default 30m) in process: --rate enqueues a
second (if --rate is not given, it first measures the maximum throughput with 20,000 jobs on a
fresh store and runs at half of it), one job in five by Enqueue and the rest in small
EnqueueMany batches, every 10 ms; one job in 100 fails its first attempt and is retried;
completed jobs are kept --result-ttl (default 5m) and swept every --sweep-interval (default
1m). Every --soak-interval (default 1m) it prints a row: jobs enqueued, completed, failed and
retried, enqueue→start p50 and p99 of first attempts, the store's claim p99 (all claims, and
those that overlapped a sweep), the longest sweep window and the jobs swept, the process's RSS,
fewest goroutines and Go heap (in use, live), the database's size, its WAL written (PostgreSQL:
the server's WAL position; SQLite: the bytes this process wrote) and the rows in the jobs
table. At the end a verdict per series compares the mean of the first 5 rows after the warm-up
(result TTL plus one sweep) with the last 5 (a fifth of the rows each in short runs): "flat",
or "rising +x %" above 10 %. --json prints {"rows": [...], "summary": {...}}; --profile-dir
writes heap and goroutine profiles after the warm-up and at the end; --vacuum-every, on
PostgreSQL, vacuums the soak's tables that often, for a server whose autovacuum is off
(docs/benchmarks.md#soak).

--scenario per-key spreads --jobs (default 30,000) no-op jobs over 10,000 fairness keys in one
queue and works them twice, on fresh stores: without limits per key, then with a cap of 1
running job per key on the queue (docs/flow-control.md#limits-per-key). It reports both
throughputs, their ratio, the store's claim times (p50, p99), and the most jobs of one key that
ran at once, read from the jobs' start and end times; it fails when that exceeds the cap.

--scenario workflow enqueues workflows of 10 parallel no-op steps and a fan-in step that runs
after them, in a queue of its own (--jobs, default 22,000: 2,000 workflows of 11 jobs; a
multiple of 11), then works them; then as many plain no-op jobs, on a fresh store; then the
same workflows with every step in one queue (as EnqueueWorkflow puts them by default); then
one fan-in of 10,000 parents (docs/workflows.md). It reports the throughputs and the ratios of
the workflows' to the plain jobs', and the fan-in steps' release latency: from the end of a
step's last parent to its own start (p50, p99). Then, on
another fresh store with the workers running, it enqueues --latency-jobs/11 workflows one at a
time at --rate jobs a second and reports their release latency at that steady load. --rounds N
makes the plain and one-queue runs N times in turn and reports the median of the N ratios
(each one-queue run over the plain run just before it): one pair of runs is no verdict on a
machine whose speed drifts from one run to the next.

--kind-cap and --kind-rate set a fleet-wide cap or rate limit on the no-op jobs' kind before
the run, to measure what a capped or rate-limited claim costs (a limit far above the
throughput, such as --kind-rate 1000000/1s) or that starts follow the limit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db, _ := cmd.Flags().GetString(flagDatabase); bench.IsPostgres(db) {
				cfg.Database = db // a fresh schema on that server, dropped afterwards
			}
			if kindRate != "" {
				r, err := hopper.ParseRate("--kind-rate", kindRate)
				if err != nil {
					return usageErrorf("%w", err)
				}
				cfg.KindRate = r
			}
			if url := serverURL(cmd); url != "" && compare {
				return usageErrorf("--compare-remote starts its own server: it takes no --server")
			} else if url != "" {
				cfg.Server, cfg.APIKey = url, os.Getenv(envAPIKey)
			}
			if err := checkScenarioFlags(cmd, scenario, cfg, compare); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			if err := checkSoakFlags(cmd, scenario, soak); err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			switch scenario {
			case "retained":
				cfg.Progress = cmd.ErrOrStderr()
				return printRetained(cmd, cfg, asJSON)
			case "horizon":
				if !cmd.Flags().Changed("jobs") {
					cfg.Jobs = bench.DefaultHorizonJobs
				}
				return printHorizon(cmd, cfg, pin, asJSON)
			case "fairness":
				for name, v := range map[string]*int{"jobs": &cfg.Jobs, "workers": &cfg.Workers, "rate": &cfg.Rate} {
					if !cmd.Flags().Changed(name) {
						*v = 0 // the scenario's own default
					}
				}
				return printFairness(cmd, cfg, asJSON)
			case "soak":
				return printSoak(cmd, cfg, soak, asJSON)
			case "batch":
				if !cmd.Flags().Changed("jobs") {
					cfg.Jobs = 0 // the scenario's own default
				}
				return printBatch(cmd, cfg, asJSON)
			case "per-key":
				if !cmd.Flags().Changed("jobs") {
					cfg.Jobs = bench.DefaultPerKeyJobs
				}
				return printPerKey(cmd, cfg, asJSON)
			case "workflow":
				if !cmd.Flags().Changed("jobs") {
					cfg.Jobs = bench.DefaultWorkflowJobs
				}
				return printWorkflowBench(cmd, cfg, asJSON)
			case "tenants", "compaction":
				for name, v := range map[string]*int{"jobs": &cfg.Jobs, "workers": &cfg.Workers} {
					if !cmd.Flags().Changed(name) {
						*v = 0 // the scenario's own default
					}
				}
				if scenario == "compaction" {
					if jobs := cmp.Or(cfg.Jobs, bench.DefaultCompactionJobs); groups < 1 || groups > jobs {
						return usageErrorf("--groups %d is outside 1–%d (the jobs)", groups, jobs)
					}
					return printCompaction(cmd, cfg, groups, asJSON)
				}
				var d time.Duration
				if cmd.Flags().Changed("duration") {
					d = soak.Duration
				}
				return printTenants(cmd, cfg, d, asJSON)
			}
			if compare {
				return printComparison(cmd, cfg, asJSON)
			}
			res, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				fmt.Fprintln(cmd.OutOrStdout(), string(res.JSON()))
				return nil
			}
			printResult(cmd.OutOrStdout(), res, cfg.Batch)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", 20000, "jobs of the throughput phase")
	f.IntVar(&cfg.Workers, "workers", 100, "concurrent workers")
	f.DurationVar(&cfg.Work, "work", 0, "how long each job takes (its handler sleeps; default 0, no-op jobs)")
	f.IntVar(&cfg.Batch, "batch", 1000, "enqueue batch size of the throughput phase")
	f.IntVar(&cfg.LatencyJobs, "latency-jobs", 1000, "jobs of the latency phase (-1 skips it)")
	f.IntVar(&cfg.Rate, "rate", 200, "enqueues per second of the latency phase")
	f.IntVar(&cfg.Conns, "conns", 16, "PostgreSQL connection pool size")
	f.IntVar(&cfg.KindCap, "kind-cap", 0, "fleet-wide cap on running no-op jobs (0: none)")
	f.BoolVar(&cfg.Metrics, "metrics", false, "in process: count every job with hopper serve's job metrics, to measure their cost")
	f.StringVar(&kindRate, "kind-rate", "", "fleet-wide rate limit on no-op job starts, N/DURATION (default none)")
	f.StringVar(&cfg.Synchronous, "synchronous", "FULL", "SQLite synchronous setting: FULL or NORMAL")
	f.StringVar(&cfg.Database, "bench-db", "", "SQLite file to use (default: a fresh temporary file)")
	f.StringVar(&cfg.Mode, "mode", "stream", "with --server: how the remote worker gets jobs, stream or poll")
	f.IntVar(&cfg.Prefetch, "prefetch", 0, "with --server in stream mode or --compare-remote: jobs the remote worker holds beyond --workers, waiting for a slot (its Config.Prefetch)")
	f.IntVar(&cfg.ClaimAhead, "claim-ahead", 0, "in process: jobs the workers claim beyond their free slots (the client's Config.ClaimAhead; 0 the default, up to 1000; -1 none)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&compare, "compare-remote", false, "measure in process, then through a server this command starts (stream and poll), and print the ratios")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	f.StringVar(&scenario, "scenario", "", "run a scenario instead of the standard benchmark: fairness, tenants, compaction, retained, horizon, soak, batch, per-key or workflow")
	f.IntVar(&groups, "groups", bench.DefaultCompactionGroups, "with --scenario compaction: the groups the jobs are spread over")
	f.IntVar(&cfg.Rows, "rows", 0, "with --scenario retained: finished jobs to fill the store with before the benchmark")
	f.BoolVar(&pin, "pin", true, "with --scenario horizon: hold the snapshot (--pin=false measures the baseline)")
	f.IntVar(&cfg.Rounds, "rounds", 1, "with --scenario workflow: rounds of the plain and one-queue runs, in turn (the median ratio is reported)")
	addSoakFlags(f, &soak)
	return cmd
}

// prefetchNote says a remote stream run's prefetch, or an in-process run's claim ahead, if
// it had one: " (prefetch N)".
func prefetchNote(res *bench.Result) string {
	switch {
	case res.Prefetch != 0:
		return fmt.Sprintf(" (prefetch %d)", res.Prefetch)
	case res.ClaimAhead == hopper.NoClaimAhead:
		return " (no claim ahead)"
	case res.ClaimAhead != 0:
		return fmt.Sprintf(" (claim ahead up to %d)", res.ClaimAhead)
	}
	return ""
}

// printJobs prints the line that says what jobs a run worked.
func printJobs(out io.Writer, res *bench.Result) {
	prefetch := prefetchNote(res)
	if res.WorkMs > 0 {
		fmt.Fprintf(out, "jobs             %d jobs of %g ms each, %d workers%s\n", res.Jobs, res.WorkMs, res.Workers, prefetch)
		return
	}
	fmt.Fprintf(out, "jobs             %d no-op jobs, %d workers%s\n", res.Jobs, res.Workers, prefetch)
}

// printResult prints the standard benchmark's figures.
func printResult(out io.Writer, res *bench.Result, batch int) {
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
	printJobs(out, res)
	fmt.Fprintf(out, "enqueue          %.0f jobs/s (batches of %d)\n", res.EnqueuePerSec, batch)
	fmt.Fprintf(out, "throughput       %.0f jobs/s\n", res.JobsPerSec)
	if res.KindCap > 0 {
		fmt.Fprintf(out, "kind cap         %d running at most\n", res.KindCap)
	}
	if res.KindRate != "" {
		fmt.Fprintf(out, "kind rate        %s starts at most\n", res.KindRate)
	}
	fmt.Fprintf(out, "alloc            %.0f bytes/job\n", res.AllocPerJob)
	if res.WriteXactsPerJob > 0 {
		fmt.Fprintf(out, "server cost      %.0f WAL bytes/job, %.3f write transactions/job (whole server, work phase)\n",
			res.WALPerJob, res.WriteXactsPerJob)
	}
	if res.LatencyJobs > 0 {
		fmt.Fprintf(out, "latency          p50 %.2f ms, p99 %.2f ms (%d jobs at %d/s)\n",
			res.LatencyP50Ms, res.LatencyP99Ms, res.LatencyJobs, res.LatencyRate)
	}
}

// printFairness runs the fairness scenario and prints what it measured.
func printFairness(cmd *cobra.Command, cfg bench.Config, asJSON bool) error {
	res, err := bench.Fairness(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
	fmt.Fprintf(out, "workers          %d, queue flood backlogged with %d jobs\n", res.Workers, res.FloodJobs)
	fmt.Fprintf(out, "trickle latency  p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d jobs at %d/s, weights 1:1; flood left %d)\n",
		res.TrickleLatencyP50, res.TrickleLatencyP99, res.TrickleLatencyMax, res.TrickleJobs, res.TrickleRate, res.FloodLeft)
	for _, sh := range res.Shares {
		fmt.Fprintf(out, "shares %d:%d       flood %.3f, trickle %.3f (%d starts in %d ms, both backlogged)\n",
			sh.FloodWeight, sh.TrickleWeight, sh.Flood, sh.Trickle, sh.Starts, res.SharedWindowMillis)
	}
	return nil
}

// printTenants runs the tenants scenario and prints what it measured.
func printTenants(cmd *cobra.Command, cfg bench.Config, d time.Duration, asJSON bool) error {
	res, err := bench.Tenants(cmd.Context(), cfg, d)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
	fmt.Fprintf(out, "workers          %d, one queue; %d quiet tenants, one job a second each for %d ms\n", res.Workers, res.QuietTenants, res.DurationMs)
	for _, r := range []struct {
		name string
		run  *bench.TenantsRun
	}{{"no flood", res.NoFlood}, {"flood, keys", res.Flood}, {"flood, no keys", res.FloodNoKeys}} {
		left := ""
		if r.run.FloodJobs > 0 {
			left = fmt.Sprintf(" enqueued during the flood of %d; %d left at the last; flood %.0f jobs/s", r.run.FloodJobs, r.run.FloodLeft, r.run.FloodPerSec)
		}
		fmt.Fprintf(out, "%-16s quiet p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d jobs%s)\n", r.name, r.run.P50Ms, r.run.P99Ms, r.run.MaxMs, r.run.QuietJobs, left)
	}
	fmt.Fprintf(out, "flood/no flood   p50 %.2f×, p99 %.2f× (fairness keys)\n", res.P50Ratio, res.P99Ratio)
	if res.Flood.QuietAfter > 0 || res.FloodNoKeys.QuietAfter > 0 {
		fmt.Fprintf(out, "note             the flood ran dry before the quiet tenants ended (%d and %d quiet jobs came after it, not counted): more --jobs or a shorter --duration measure them all\n",
			res.Flood.QuietAfter, res.FloodNoKeys.QuietAfter)
	}
	return nil
}

// printCompaction runs the compaction scenario and prints what it measured.
func printCompaction(cmd *cobra.Command, cfg bench.Config, groups int, asJSON bool) error {
	res, err := bench.Compaction(cmd.Context(), cfg, groups)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
	fmt.Fprintf(out, "queued           %d jobs in %d groups (filled in %.1f s)\n", res.Jobs, res.Groups, res.FillSecs)
	fmt.Fprintf(out, "compaction       %.2f s: %d groups, %d jobs replaced, %d rows written\n", res.Seconds, res.Compacted, res.Replaced, res.RowsWritten)
	fmt.Fprintf(out, "enqueues meanwhile p50 %.2f ms, max %.2f ms (%d, one every 10 ms)\n", res.ProbeP50Ms, res.ProbeMaxMs, res.ProbeEnqueues)
	return nil
}

// checkScenarioFlags refuses a scenario that does not exist, a scenario's flag without it, and
// a scenario with flags it cannot take.
func checkScenarioFlags(cmd *cobra.Command, scenario string, cfg bench.Config, compare bool) error {
	switch {
	case cfg.Rows < 0 || cfg.Rows > bench.MaxRows:
		return usageErrorf("--rows %d is outside 0–%d", cfg.Rows, bench.MaxRows)
	case cmd.Flags().Changed("rows") && scenario != "retained":
		return usageErrorf("--rows is the retained scenario's: add --scenario retained")
	case cmd.Flags().Changed("groups") && scenario != "compaction":
		return usageErrorf("--groups is the compaction scenario's: add --scenario compaction")
	case cmd.Flags().Changed("duration") && scenario != "soak" && scenario != "tenants":
		return usageErrorf("--duration is the soak and tenants scenarios': add --scenario soak or tenants")
	case cmd.Flags().Changed("pin") && scenario != "horizon":
		return usageErrorf("--pin is the horizon scenario's: add --scenario horizon")
	case cmd.Flags().Changed("rounds") && scenario != "workflow":
		return usageErrorf("--rounds is the workflow scenario's: add --scenario workflow")
	case cfg.Rounds < 1 || cfg.Rounds > bench.MaxRounds:
		return usageErrorf("--rounds %d is outside 1–%d", cfg.Rounds, bench.MaxRounds)
	case cfg.Work < 0 || cfg.Work > bench.MaxWork:
		return usageErrorf("--work %s is outside 0–%s", cfg.Work, bench.MaxWork)
	case cmd.Flags().Changed("work") && (scenario == "fairness" || scenario == "soak" || scenario == "batch" || scenario == "tenants" || scenario == "compaction" || scenario == "workflow"):
		return usageErrorf("--work is not supported with --scenario %s", scenario)
	case cfg.ClaimAhead < hopper.NoClaimAhead || cfg.ClaimAhead > hopper.MaxClaimAhead:
		return usageErrorf("--claim-ahead %d is outside -1–%d", cfg.ClaimAhead, hopper.MaxClaimAhead)
	case cmd.Flags().Changed("claim-ahead") && (cfg.Server != "" || compare):
		return usageErrorf("--claim-ahead is the in-process client's: a remote worker's is --prefetch")
	case cmd.Flags().Changed("claim-ahead") && scenario == "soak":
		return usageErrorf("--claim-ahead is not supported with --scenario soak")
	case cmd.Flags().Changed("prefetch") && cfg.Server == "" && !compare:
		return usageErrorf("--prefetch is the remote worker's: add --server or --compare-remote")
	case cfg.Prefetch < 0 || cfg.Prefetch > 0 && cfg.Workers+cfg.Prefetch > workerapi.MaxStreamCredit:
		return usageErrorf("--prefetch %d: --workers and --prefetch together are a stream's credit, at most %d", cfg.Prefetch, workerapi.MaxStreamCredit)
	case cfg.Prefetch > 0 && cfg.Server != "" && cfg.Mode == "poll":
		return usageErrorf("--prefetch is for --mode stream (poll mode claims ahead)")
	}
	switch scenario {
	case "":
		return nil
	case "fairness", "tenants", "compaction", "retained", "horizon", "soak", "batch", "per-key", "workflow":
	default:
		return usageErrorf("--scenario %q: the scenarios are fairness, tenants, compaction, retained, horizon, soak, batch, per-key and workflow", scenario)
	}
	if compare || cfg.Server != "" {
		return usageErrorf("--scenario %s runs in process: no --server or --compare-remote", scenario)
	}
	if scenario == "horizon" && !bench.IsPostgres(cfg.Database) {
		return usageErrorf("--scenario horizon holds a PostgreSQL snapshot: it needs --database postgres://…, not SQLite")
	}
	return nil
}

// printBatch runs the batch scenario and prints what it measured.
func printBatch(cmd *cobra.Command, cfg bench.Config, asJSON bool) error {
	res, err := bench.Batch(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
	fmt.Fprintf(out, "jobs             %d in groups of %d, %d workers\n", res.Jobs, res.GroupSize, res.Workers)
	fmt.Fprintf(out, "batch worker     %.0f jobs/s (%d batches)\n", res.BatchJobsPerSec, res.Batches)
	fmt.Fprintf(out, "one by one       %.0f jobs/s (%d jobs ended within the run)\n", res.SingleJobsPerSec, res.SingleJobs)
	fmt.Fprintf(out, "speedup          %.1fx\n", res.Speedup)
	return nil
}

// printWorkflowBench runs the workflow scenario and prints what it measured.
func printWorkflowBench(cmd *cobra.Command, cfg bench.Config, asJSON bool) error {
	res, err := bench.Workflow(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
	fmt.Fprintf(out, "jobs             %d: %d workflows of %d steps and a fan-in step, %d workers\n", res.Jobs, res.Workflows, res.Width, res.Workers)
	fmt.Fprintf(out, "workflows        %.0f jobs/s; fan-in release p50 %.2f ms, p99 %.2f ms\n", res.WorkflowJobsPerSec, res.ReleaseP50Ms, res.ReleaseP99Ms)
	fmt.Fprintf(out, "plain jobs       %.0f jobs/s\n", res.PlainJobsPerSec)
	fmt.Fprintf(out, "ratio            %.2f (workflows / plain)\n", res.Ratio)
	fmt.Fprintf(out, "one queue        %.0f jobs/s, ratio %.2f; fan-in release p50 %.2f ms, p99 %.2f ms\n",
		res.OneQueueJobsPerSec, res.OneQueueRatio, res.OneQueueReleaseP50Ms, res.OneQueueReleaseP99Ms)
	if res.Rounds > 1 {
		ratios := make([]string, len(res.OneQueueRatios))
		for i, r := range res.OneQueueRatios {
			ratios[i] = fmt.Sprintf("%.2f", r)
		}
		fmt.Fprintf(out, "rounds           %d (plain, one queue and its ratio: medians; each round's ratio of one queue to plain: %s)\n",
			res.Rounds, strings.Join(ratios, " "))
	}
	fmt.Fprintf(out, "fan-in of %d  %.0f jobs/s; release %.2f ms\n", res.FanInParents, res.FanInJobsPerSec, res.FanInReleaseMs)
	if res.PacedWorkflows > 0 {
		fmt.Fprintf(out, "paced            %d workflows at %d jobs/s; fan-in release p50 %.2f ms, p99 %.2f ms\n",
			res.PacedWorkflows, res.PacedRate, res.PacedReleaseP50Ms, res.PacedReleaseP99Ms)
	}
	return nil
}

// printPerKey runs the per-key scenario and prints what it measured.
func printPerKey(cmd *cobra.Command, cfg bench.Config, asJSON bool) error {
	res, err := bench.PerKey(cmd.Context(), cfg)
	out := cmd.OutOrStdout()
	if res != nil && asJSON {
		fmt.Fprintln(out, string(res.JSON()))
	} else if res != nil {
		fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", res.Store, res.Durability, res.CPUs, res.GoVersion)
		fmt.Fprintf(out, "jobs             %d no-op jobs over %d fairness keys, %d workers\n", res.Jobs, res.Keys, res.Workers)
		for _, r := range []bench.PerKeyRun{res.Uncapped, res.Capped} {
			label := "no cap per key  "
			if r.CapPerKey > 0 {
				label = fmt.Sprintf("cap %d per key   ", r.CapPerKey)
			}
			fmt.Fprintf(out, "%s %.0f jobs/s; claims p50 %.2f ms, p99 %.2f ms (%d claims); most running per key %d (%d jobs checked)\n",
				label, r.JobsPerSec, r.ClaimP50Ms, r.ClaimP99Ms, r.Claims, r.MaxPerKey, r.JobsChecked)
		}
		fmt.Fprintf(out, "ratio            %.3f (capped / uncapped throughput)\n", res.Ratio)
	}
	return err
}

// printRetained runs the retained scenario and prints what it measured.
func printRetained(cmd *cobra.Command, cfg bench.Config, asJSON bool) error {
	res, err := bench.Retained(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	fmt.Fprintf(out, "retained         %d finished jobs, filled in %.1f s (the sweep's first walk %.1f s); database %.1f MiB\n",
		res.RetainedRows, res.FillSeconds, res.WalkSeconds, float64(res.DBBytes)/(1<<20))
	printResult(out, &res.Result, cfg.Batch)
	return nil
}

// printHorizon runs the horizon scenario and prints what it measured.
func printHorizon(cmd *cobra.Command, cfg bench.Config, pin, asJSON bool) error {
	res, err := bench.Horizon(cmd.Context(), cfg, pin)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		fmt.Fprintln(out, string(res.JSON()))
		return nil
	}
	held := "held by another connection for the whole run"
	if !res.Pinned {
		held = "none held (the baseline)"
	}
	fmt.Fprintf(out, "snapshot         %s\n", held)
	printResult(out, &res.Result, cfg.Batch)
	fmt.Fprintf(out, "claims           p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d calls in the throughput phase, %.1f jobs each)\n",
		res.ClaimP50Ms, res.ClaimP99Ms, res.ClaimMaxMs, res.Claims, res.ClaimJobs)
	fmt.Fprintf(out, "jobs table       %d dead row versions, %d updates (%d HOT), %.1f MiB with its indexes\n",
		res.DeadTuples, res.Updates, res.HOTUpdates, float64(res.JobsBytes)/(1<<20))
	return nil
}

// startCPUProfile profiles this process into path until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// printComparison runs bench.Compare and prints its three throughputs and the ratios.
func printComparison(cmd *cobra.Command, cfg bench.Config, asJSON bool) error {
	cmp, err := bench.Compare(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		b, _ := json.Marshal(cmp) // plain numbers and strings always marshal
		fmt.Fprintln(out, string(b))
		return nil
	}
	in := cmp.InProcess
	fmt.Fprintf(out, "store            %s (%s), %d CPUs, %s\n", in.Store, in.Durability, in.CPUs, in.GoVersion)
	printJobs(out, in)
	fmt.Fprintf(out, "in process       %6.0f jobs/s\n", in.JobsPerSec)
	fmt.Fprintf(out, "server, stream   %6.0f jobs/s  %.2f× of in process%s\n", cmp.Stream.JobsPerSec, cmp.StreamRatio(), prefetchNote(cmp.Stream))
	fmt.Fprintf(out, "server, poll     %6.0f jobs/s  %.2f× of in process\n", cmp.Poll.JobsPerSec, cmp.PollRatio())
	for _, r := range []*bench.Result{in, cmp.Stream, cmp.Poll} {
		if r.LatencyJobs > 0 {
			fmt.Fprintf(out, "latency          p50 %.2f ms, p99 %.2f ms (%d jobs at %d/s): %s\n",
				r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyJobs, r.LatencyRate, r.Store)
		}
	}
	return nil
}
