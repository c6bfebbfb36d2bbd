// Command peers runs Hopper's benchmark and the same benchmark on River
// (github.com/riverqueue/river) against the same PostgreSQL server, in the same run, and prints
// both side by side with the ratio of their throughputs. See README.md.
//
//	cd bench/peers && go run . --database 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// It is a separate Go module so the main module never depends on River.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

type options struct {
	database    string
	jobs        int
	workers     int
	batch       int
	rate        int
	latencyJobs int
	rounds      int
	only        string
	asJSON      bool
	timeout     time.Duration
	scenario    string

	pin bool // the horizon scenario: hold the snapshot

	riverSchema            string
	riverAppName           string // River's sessions' application_name (default pgx's)
	riverMaxConns          int
	riverFetchCooldown     time.Duration
	riverFetchPollInterval time.Duration

	hopperSrc  string
	hopperBin  string
	hopperArgs []string
}

// result is one system's figures. The JSON names are those of `hopper bench --json`.
type result struct {
	Jobs          int     `json:"jobs"`
	Workers       int     `json:"workers"`
	EnqueuePerSec float64 `json:"enqueue_per_sec"`
	JobsPerSec    float64 `json:"jobs_per_sec"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
	LatencyJobs   int     `json:"latency_jobs"`
	LatencyRate   int     `json:"latency_rate"`
	// The server's WAL bytes and write transactions (transaction ids assigned) per job during
	// the throughput phase's work; `hopper bench` reports the same names.
	WALPerJob        float64 `json:"wal_bytes_per_job,omitempty"`
	WriteXactsPerJob float64 `json:"write_xacts_per_job,omitempty"`

	// River only.
	JobsPerSecInclStop float64 `json:"jobs_per_sec_incl_stop,omitempty"`
	Version            string  `json:"version,omitempty"`
	Schema             string  `json:"schema,omitempty"`

	// Hopper only: its whole JSON object as printed.
	Raw map[string]any `json:"-"`
}

// MarshalJSON prints Hopper's object as it came (all its fields), River's as the struct.
func (r *result) MarshalJSON() ([]byte, error) {
	if r.Raw != nil {
		return json.Marshal(r.Raw)
	}
	type plain result
	return json.Marshal((*plain)(r))
}

type round struct {
	Round  int      `json:"round"`
	Order  []string `json:"order"`
	Hopper *result  `json:"hopper,omitempty"`
	River  *result  `json:"river,omitempty"`
	Ratio  *float64 `json:"ratio_jobs_per_sec,omitempty"`
}

type report struct {
	Hopper *result  `json:"hopper,omitempty"`
	River  *result  `json:"river,omitempty"`
	Ratio  *float64 `json:"ratio_jobs_per_sec,omitempty"`
	Rounds []round  `json:"rounds"`
	Server server   `json:"server"`
}

type server struct {
	Version           string `json:"version"`
	SynchronousCommit string `json:"synchronous_commit"`
	Fsync             string `json:"fsync"`
	CPUs              int    `json:"cpus"`
	GoVersion         string `json:"go_version"`
	RiverVersion      string `json:"river_version"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run() error {
	o := &options{}
	var hopperArgs string
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.StringVar(&o.database, "database", os.Getenv("DATABASE_URL"), "PostgreSQL URL for both systems (default $DATABASE_URL)")
	fs.IntVar(&o.jobs, "jobs", 20000, "jobs of the throughput phase")
	fs.IntVar(&o.workers, "workers", 100, "concurrent workers (Hopper --workers, River MaxWorkers of the default queue)")
	fs.IntVar(&o.batch, "batch", 1000, "jobs per EnqueueMany / InsertMany call")
	fs.IntVar(&o.rate, "rate", 200, "enqueues per second of the latency phase")
	fs.IntVar(&o.latencyJobs, "latency-jobs", 1000, "jobs of the latency phase (0 or -1 skips it)")
	fs.IntVar(&o.rounds, "rounds", 1, "rounds; round 1 runs River then Hopper, round 2 Hopper then River, and so on")
	fs.StringVar(&o.only, "only", "both", "run only one system: river, hopper or both")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up after this long")
	fs.StringVar(&o.riverSchema, "river-schema", "river_bench", "schema created for River (dropped before and after each round)")
	fs.IntVar(&o.riverMaxConns, "river-max-conns", 0, "River's pgxpool MaxConns (0: pgx default or the URL's pool_max_conns)")
	// River's own benchmark (cmd/river/riverbench) uses these two; River's defaults (100ms, 1s)
	// cap a queue at about MaxWorkers jobs per 100ms, i.e. ~1,000 jobs/s with 100 workers.
	fs.DurationVar(&o.riverFetchCooldown, "river-fetch-cooldown", 2*time.Millisecond, "River Config.FetchCooldown (River's default is 100ms)")
	fs.DurationVar(&o.riverFetchPollInterval, "river-fetch-poll-interval", 20*time.Millisecond, "River Config.FetchPollInterval (River's default is 1s)")
	fs.StringVar(&o.hopperSrc, "hopper-src", "../..", "root of Hopper's main module, built with `go build ./cmd/hopper`")
	fs.StringVar(&o.hopperBin, "hopper-bin", "", "use this hopper binary instead of building one")
	fs.StringVar(&hopperArgs, "hopper-args", "", "extra arguments for `hopper bench`, space separated")
	fs.StringVar(&o.scenario, "scenario", "", "fairness: a flooded queue and a trickle queue (defaults --jobs 200000 --workers 20 --rate 100); "+
		"horizon: the jobs worked while another connection holds a snapshot (default --jobs 500000)")
	fs.BoolVar(&o.pin, "pin", true, "with --scenario horizon: hold the snapshot (--pin=false is the baseline)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.hopperArgs = strings.Fields(hopperArgs)
	if o.scenario == "fairness" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]*int{"jobs": &o.jobs, "workers": &o.workers, "rate": &o.rate} {
			if !set[name] {
				*v = map[string]int{"jobs": 200_000, "workers": 20, "rate": 100}[name]
			}
		}
	} else if o.scenario == "horizon" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["jobs"] {
			o.jobs = 500_000
		}
	} else if o.scenario != "" {
		return fmt.Errorf("--scenario %q: the scenarios are fairness and horizon", o.scenario)
	}
	if o.latencyJobs < 0 {
		o.latencyJobs = 0
	}
	switch {
	case o.database == "":
		return errors.New("--database postgres://… is required")
	case o.jobs < 1 || o.workers < 1 || o.batch < 1 || o.rate < 1 || o.rounds < 1:
		return errors.New("--jobs, --workers, --batch, --rate and --rounds must be positive")
	case !slices.Contains([]string{"both", "river", "hopper"}, o.only):
		return errors.New("--only must be river, hopper or both")
	}
	doRiver, doHopper := o.only != "hopper", o.only != "river"

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	srv, err := serverInfo(ctx, o.database)
	if err != nil {
		return err
	}

	var bin string
	if doHopper {
		dir, err := os.MkdirTemp("", "hopper-peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if bin, err = buildHopper(ctx, o, dir); err != nil {
			return err
		}
	}

	switch o.scenario {
	case "fairness":
		return runFairness(ctx, o, bin, doRiver, doHopper, srv)
	case "horizon":
		return runHorizon(ctx, o, bin, doRiver, doHopper, srv)
	}
	rep := &report{Server: srv}
	if err := runRounds(ctx, o, bin, doRiver, doHopper, rep); err != nil {
		// Show what was measured before the failure, on stderr so stdout stays clean.
		if len(rep.Rounds) > 0 {
			summarize(rep)
			printTable(os.Stderr, o, rep)
		}
		return err
	}
	summarize(rep)

	if o.asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
		return nil
	}
	printTable(os.Stdout, o, rep)
	return nil
}

// runRounds runs the rounds, appending each to rep; a failed round is appended with what it has.
func runRounds(ctx context.Context, o *options, bin string, doRiver, doHopper bool, rep *report) error {
	var err error
	for i := range o.rounds {
		r := round{Round: i + 1}
		r.Order = []string{"river", "hopper"}
		if i%2 == 1 {
			r.Order = []string{"hopper", "river"}
		}
		for _, sys := range r.Order {
			switch {
			case sys == "river" && doRiver:
				progress("round %d: river …", r.Round)
				r.River, err = runRiver(ctx, o)
			case sys == "hopper" && doHopper:
				progress("round %d: hopper …", r.Round)
				r.Hopper, err = runHopper(ctx, o, bin)
			}
			if err != nil {
				if r.River != nil || r.Hopper != nil {
					rep.Rounds = append(rep.Rounds, r)
				}
				return err
			}
		}
		if r.Hopper != nil && r.River != nil {
			x := r.Hopper.JobsPerSec / r.River.JobsPerSec
			r.Ratio = &x
		}
		rep.Rounds = append(rep.Rounds, r)
	}
	return nil
}

// summarize sets the top-level figures: with one round that round's, with several the round with
// the median jobs/s of each system, and the ratio of the two medians.
func summarize(rep *report) {
	pick := func(get func(round) *result) *result {
		var rs []*result
		for _, r := range rep.Rounds {
			if x := get(r); x != nil {
				rs = append(rs, x)
			}
		}
		if len(rs) == 0 {
			return nil
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].JobsPerSec < rs[j].JobsPerSec })
		return rs[(len(rs)-1)/2]
	}
	rep.Hopper = pick(func(r round) *result { return r.Hopper })
	rep.River = pick(func(r round) *result { return r.River })
	if rep.Hopper != nil && rep.River != nil {
		x := rep.Hopper.JobsPerSec / rep.River.JobsPerSec
		rep.Ratio = &x
	}
}

func printTable(w io.Writer, o *options, rep *report) {
	s := rep.Server
	fmt.Fprintf(w, "PostgreSQL %s (synchronous_commit=%s, fsync=%s), %d CPUs, %s, River %s\n",
		s.Version, s.SynchronousCommit, s.Fsync, s.CPUs, s.GoVersion, s.RiverVersion)
	fmt.Fprintf(w, "%d no-op jobs enqueued in batches of %d, %d workers; latency: %d jobs at %d/s\n\n",
		o.jobs, o.batch, o.workers, o.latencyJobs, o.rate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tsystem\tjobs\tworkers\tenqueue/s\tjobs/s\tp50 ms\tp99 ms\tWAL B/job\twrite tx/job\t")
	for _, r := range rep.Rounds {
		for _, sys := range r.Order {
			res := r.River
			if sys == "hopper" {
				res = r.Hopper
			}
			if res == nil {
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.0f\t%.3f\t\n", r.Round, sys, res.Jobs, res.Workers,
				res.EnqueuePerSec, res.JobsPerSec, res.LatencyP50Ms, res.LatencyP99Ms, res.WALPerJob, res.WriteXactsPerJob)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rep.Rounds {
		if r.Ratio != nil {
			fmt.Fprintf(w, "round %d: Hopper/River jobs/s = %.2f\n", r.Round, *r.Ratio)
		}
	}
	if rep.Ratio != nil && len(rep.Rounds) > 1 {
		fmt.Fprintf(w, "median:  Hopper/River jobs/s = %.2f\n", *rep.Ratio)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func serverInfo(ctx context.Context, dsn string) (server, error) {
	s := server{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), RiverVersion: riverVersion()}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return s, fmt.Errorf("connect to %s: %w", redactURL(dsn), err)
	}
	defer conn.Close(ctx)
	for q, dst := range map[string]*string{
		"SHOW server_version":     &s.Version,
		"SHOW synchronous_commit": &s.SynchronousCommit,
		"SHOW fsync":              &s.Fsync,
	} {
		if err := conn.QueryRow(ctx, q).Scan(dst); err != nil {
			return s, fmt.Errorf("%s: %w", q, err)
		}
	}
	return s, nil
}

func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func percentileMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return float64(s[i]) / float64(time.Millisecond)
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
