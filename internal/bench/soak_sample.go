package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SoakRow is what one interval of the soak measured. Counts are of the interval; sizes are at
// its end. A figure that could not be read is -1 (RSS and the SQLite write counter are read
// from /proc, on Linux only; RSS is then left out of the JSON).
type SoakRow struct {
	Row        int     `json:"row"`
	ElapsedSec float64 `json:"elapsed_sec"`
	Load1      float64 `json:"load1,omitempty"` // the machine's 1-minute load average (Linux)

	Enqueued      int64 `json:"enqueued"`
	Completed     int64 `json:"completed"`
	Failed        int64 `json:"failed"`  // first attempts that failed and were scheduled again
	Retried       int64 `json:"retried"` // attempts after the first that started
	EnqueueErrors int64 `json:"enqueue_errors"`

	// Enqueue→start of first attempts, from the time in the job's args to its handler.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`

	// The store's claim calls, and those of them that overlapped a sweep window.
	Claims          int     `json:"claims"`
	ClaimP99Ms      float64 `json:"claim_p99_ms"`
	ClaimMaxMs      float64 `json:"claim_max_ms"`
	ClaimsInSweep   int     `json:"claims_in_sweep"`
	ClaimInSweepP99 float64 `json:"claim_in_sweep_p99_ms"`
	SweepWindows    int64   `json:"sweep_windows"`
	SweepMaxMs      float64 `json:"sweep_max_ms"` // the longest sweep window (one transaction)
	Swept           int64   `json:"swept"`        // jobs the sweep deleted
	RSSBytes        int64   `json:"rss_bytes,omitempty"`
	Goroutines      int     `json:"goroutines"`       // at the row's end
	GoroutinesMin   int     `json:"goroutines_min"`   // the fewest seen in the row, looking every second
	HeapInuseBytes  int64   `json:"heap_inuse_bytes"` // runtime.MemStats.HeapInuse: live and not yet collected
	HeapLiveBytes   int64   `json:"heap_live_bytes"`  // live as of the last collection (/gc/heap/live:bytes)
	DBBytes         int64   `json:"db_bytes"`
	WALBytes        int64   `json:"wal_bytes"` // written during the row (SoakSummary.WriteCounter)
	JobsRows        int64   `json:"jobs_rows"` // rows in the jobs table, expired or not
	// The soak's own vacuum (SoakConfig.Vacuum): time spent in the row, failed passes.
	VacuumMs     float64 `json:"vacuum_ms,omitempty"`
	VacuumErrors int64   `json:"vacuum_errors,omitempty"`
}

// sampler measures the rows.
type sampler struct {
	probe     dbProbe
	floor     *goroutineFloor
	written   int64 // the write counter at the last row
	latencies []time.Duration
	claims    claimTimes
}

func newSampler(ctx context.Context, probe dbProbe) *sampler {
	w, err := probe.written(ctx)
	if err != nil {
		w = -1
	}
	return &sampler{probe: probe, written: w, floor: newGoroutineFloor()}
}

// row measures row i, elapsed into the run.
func (s *sampler) row(ctx context.Context, i int, elapsed time.Duration, timed *timedStore, load *soakLoad) SoakRow {
	r := SoakRow{Row: i, ElapsedSec: elapsed.Seconds(), Load1: loadAverage(),
		Enqueued: load.enqueued.Swap(0), Completed: load.completed.Swap(0), Failed: load.failed.Swap(0),
		Retried: load.retried.Swap(0), EnqueueErrors: load.enqueueErrs.Swap(0)}
	s.latencies = load.takeLatencies(s.latencies)
	r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs = spread(s.latencies)
	s.claims = timed.take(s.claims)
	c := s.claims
	r.Claims, r.ClaimsInSweep = len(c.claims), len(c.duringSweep)
	_, r.ClaimP99Ms, r.ClaimMaxMs = spread(c.claims)
	_, r.ClaimInSweepP99, _ = spread(c.duringSweep)
	r.SweepWindows, r.SweepMaxMs, r.Swept = c.sweepWins, ms(c.sweepMax), c.swept
	s.process(&r)
	s.database(ctx, &r)
	return r
}

// process fills in what the process holds.
func (s *sampler) process(r *SoakRow) {
	if rss, err := procRSS(); err == nil {
		r.RSSBytes = rss
	}
	r.Goroutines, r.GoroutinesMin = runtime.NumGoroutine(), s.floor.take()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	r.HeapInuseBytes = int64(m.HeapInuse)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if live[0].Value.Kind() == metrics.KindUint64 {
		r.HeapLiveBytes = int64(live[0].Value.Uint64())
	}
}

// database fills in what the database holds and wrote.
func (s *sampler) database(ctx context.Context, r *SoakRow) {
	r.DBBytes, r.JobsRows, r.WALBytes = -1, -1, -1
	if n, err := s.probe.size(ctx); err == nil {
		r.DBBytes = n
	}
	if n, err := s.probe.rows(ctx); err == nil {
		r.JobsRows = n
	}
	w, err := s.probe.written(ctx)
	if err != nil {
		w = -1
	}
	if w >= 0 && s.written >= 0 {
		r.WALBytes = w - s.written
	}
	s.written = w
}

// spread sorts ds in place and returns its p50, p99 and maximum in milliseconds (0 for none).
func spread(ds []time.Duration) (p50, p99, maxMs float64) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	at := func(p float64) float64 { return ms(ds[int(float64(len(ds)-1)*p)]) }
	return at(0.50), at(0.99), ms(ds[len(ds)-1])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadAverage is the machine's 1-minute load average, 0 where /proc/loadavg is missing.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// writeProfiles writes the heap and goroutine profiles of the process into dir, for row i.
func writeProfiles(dir string, i int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	runtime.GC() // the heap profile shows the heap as of the last collection
	for _, name := range []string{"heap", "goroutine"} {
		f, err := os.Create(filepath.Join(dir, name+"-"+strconv.Itoa(i)+".pprof"))
		if err != nil {
			return err
		}
		err = pprof.Lookup(name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
