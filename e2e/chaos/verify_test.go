//go:build chaos

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// runKey names one handler run: a job and the lease token it ran under.
type runKey struct {
	job   string
	token int64
}

// workerLogs is what every chaos worker of a harness wrote, oldest line first.
type workerLogs struct {
	lines  []Line
	starts map[string][]Line // handler starts by job
	ends   map[runKey]Line
}

// readWorkerLogs reads every worker's log in dir.
func readWorkerLogs(t *testing.T, dir string) *workerLogs {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	require.NoError(t, err)
	l := &workerLogs{starts: map[string][]Line{}, ends: map[runKey]Line{}}
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line Line
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "%s: line %q", name, sc.Text())
			l.lines = append(l.lines, line)
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	sort.SliceStable(l.lines, func(i, j int) bool { return l.lines[i].T < l.lines[j].T })
	for _, line := range l.lines {
		switch line.Ev {
		case "start":
			l.starts[line.Job] = append(l.starts[line.Job], line)
		case "end":
			l.ends[runKey{line.Job, line.Token}] = line
		}
	}
	return l
}

// firstAfter returns the time of the first line after t that match accepts, or zero.
func (l *workerLogs) firstAfter(t time.Time, match func(Line) bool) time.Time {
	for _, line := range l.lines {
		if line.T > t.UnixNano() && match(line) {
			return time.Unix(0, line.T)
		}
	}
	return time.Time{}
}

// completedOK matches a Complete the server accepted.
func completedOK(l Line) bool { return l.Ev == "rpc" && l.Proc == "Complete" && l.Code == "ok" }

// jobHistory is a job as the API shows it, with its ended attempts.
type jobHistory struct {
	job      *hopperv1.Job
	attempts []*hopperv1.Attempt
}

// allJobs lists every job through a, oldest first; with states, those in these states.
func (a *api) allJobs(ctx context.Context, states ...string) ([]*hopperv1.Job, error) {
	var out []*hopperv1.Job
	cursor := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := a.jobs.List(cctx, &hopperv1.ListRequest{States: states, Limit: 10000, Ascending: true, Cursor: cursor})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, res.GetJobs()...)
		if cursor = res.GetNextCursor(); cursor == "" {
			return out, nil
		}
	}
}

// histories reads every job and its attempts through a.
func (a *api) histories(ctx context.Context) (map[string]*jobHistory, error) {
	jobs, err := a.allJobs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*jobHistory, len(jobs))
	var mu sync.Mutex
	var firstErr error
	work := make(chan *hopperv1.Job)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				res, err := a.jobs.Events(cctx, &hopperv1.EventsRequest{Id: j.GetId()})
				cancel()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("events of %s: %w", j.GetId(), err)
				}
				out[j.GetId()] = &jobHistory{job: j, attempts: res.GetAttempts()}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	return out, firstErr
}

// verdict is what verifyRuns found.
type verdict struct {
	Jobs         int // acknowledged
	Lost         int // acknowledged and not completed (nor an explained dead letter)
	DeadLettered int // failed with worker_lost or lease_expired after recorded losses
	Runs         int // handler starts
	// Dups are handler runs of a job beyond its first that follow a lost attempt (lease
	// expired, released, worker lost): work done twice. Retries after a failed attempt are not
	// counted.
	Dups       int
	Causes     map[string]int // Dups by the recorded outcome of the attempt that was lost
	Retries    int
	Violations []string
}

// lostOutcomes are the attempt outcomes of an attempt taken from its worker.
var lostOutcomes = map[string]bool{"lease_expired": true, "canceled": true, "worker_lost": true}

// verifyRuns checks the contracts of at-least-once and of fenced leases over every job the
// API lists, against the handler runs the workers logged:
//
//   - every acknowledged job completed, or is a dead letter whose last attempt was lost
//     (worker_lost or lease_expired) after recorded losses (explainedLoss);
//   - no job has two ok attempts; a completed job has one, and its handler run is logged;
//   - a job's attempts have distinct fencing tokens that grow with their start times;
//   - no token was handed to two handler starts of a job;
//   - every handler run other than the successful one is explained by a recorded attempt of
//     its token with an outcome other than ok.
func verifyRuns(acked []string, hist map[string]*jobHistory, logs *workerLogs) *verdict {
	v := &verdict{Jobs: len(acked), Causes: map[string]int{}}
	bad := func(format string, args ...any) { v.Violations = append(v.Violations, fmt.Sprintf(format, args...)) }
	for _, id := range acked {
		h := hist[id]
		switch {
		case h == nil:
			v.Lost++
			bad("job %s was acknowledged but is gone", id)
		case h.job.GetState() == "completed":
		case explainedLoss(h):
			v.DeadLettered++
		default:
			v.Lost++
			bad("job %s ended %s, not completed (last error %q)", id, h.job.GetState(), h.job.GetLastError())
		}
	}
	for id, h := range hist {
		verifyJob(id, h, logs.starts[id], v, bad)
	}
	return v
}

func verifyJob(id string, h *jobHistory, starts []Line, v *verdict, bad func(string, ...any)) {
	byToken := map[int64]*hopperv1.Attempt{}
	var okAttempt *hopperv1.Attempt
	for _, a := range h.attempts {
		if byToken[a.GetLeaseToken()] != nil {
			bad("job %s: two attempts with token %d", id, a.GetLeaseToken())
		}
		byToken[a.GetLeaseToken()] = a
		if a.GetOutcome() == "ok" {
			if okAttempt != nil {
				bad("job %s: two ok attempts (tokens %d and %d)", id, okAttempt.GetLeaseToken(), a.GetLeaseToken())
			}
			okAttempt = a
		}
	}
	if h.job.GetState() == "completed" && okAttempt == nil {
		bad("job %s completed without an ok attempt", id)
	}
	sorted := append([]*hopperv1.Attempt(nil), h.attempts...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].GetStartedAt().AsTime().Before(sorted[j].GetStartedAt().AsTime())
	})
	for i := 1; i < len(sorted); i++ {
		if sorted[i].GetLeaseToken() <= sorted[i-1].GetLeaseToken() {
			bad("job %s: token %d started after token %d", id, sorted[i].GetLeaseToken(), sorted[i-1].GetLeaseToken())
		}
	}
	seen := map[int64]bool{}
	for _, s := range starts {
		v.Runs++
		if seen[s.Token] {
			bad("job %s: token %d handed to two handler starts", id, s.Token)
			continue
		}
		seen[s.Token] = true
		if okAttempt != nil && s.Token == okAttempt.GetLeaseToken() {
			continue
		}
		a := byToken[s.Token]
		switch {
		case a == nil:
			bad("job %s: the handler run of token %d (worker %s) has no recorded attempt", id, s.Token, s.Worker)
		case a.GetOutcome() == "ok":
			bad("job %s: a second ok", id)
		case lostOutcomes[a.GetOutcome()]:
			v.Dups++
			v.Causes[a.GetOutcome()]++
		default:
			v.Retries++
		}
	}
	if okAttempt != nil && len(starts) > 0 && !seen[okAttempt.GetLeaseToken()] {
		bad("job %s: completed by token %d, which no logged handler run had", id, okAttempt.GetLeaseToken())
	}
}

// explainedLoss reports whether a job is a dead letter because its worker kept being lost:
// failed, its last attempt worker_lost or lease_expired, after at least one other loss.
func explainedLoss(h *jobHistory) bool {
	if h.job.GetState() != "failed" || len(h.attempts) == 0 {
		return false
	}
	last := h.attempts[len(h.attempts)-1]
	if o := last.GetOutcome(); o != "worker_lost" && o != "lease_expired" {
		return false
	}
	losses := 0
	for _, a := range h.attempts {
		if lostOutcomes[a.GetOutcome()] {
			losses++
		}
	}
	return losses >= 2
}

// require fails t when the verdict holds violations, showing the first ones.
func (v *verdict) require(t *testing.T) {
	t.Helper()
	if len(v.Violations) == 0 {
		return
	}
	shown := v.Violations[:min(20, len(v.Violations))]
	t.Errorf("%d contract violations, the first %d:\n  %s", len(v.Violations), len(shown), strings.Join(shown, "\n  "))
}

// dupText describes the duplicates with their causes: "12 (canceled 8, lease_expired 4)".
func (v *verdict) dupText() string {
	if v.Dups == 0 {
		return "0"
	}
	var parts []string
	for cause, n := range v.Causes {
		parts = append(parts, fmt.Sprintf("%s %d", cause, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", v.Dups, strings.Join(parts, ", "))
}

// logTail reads the workers' logs as they grow, parsing each line once, and keeps the times
// of the completions the server accepted, for recovery and throughput figures while a
// scenario runs.
type logTail struct {
	dir       string
	offsets   map[string]int64
	completed []time.Time // in the order read: sorted per file, not across files
}

func newLogTail(dir string) *logTail { return &logTail{dir: dir, offsets: map[string]int64{}} }

// refresh reads what the logs gained since the last refresh.
func (lt *logTail) refresh(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(lt.dir, "*.jsonl"))
	require.NoError(t, err)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		from := lt.offsets[name]
		end := int64(bytes.LastIndexByte(b, '\n') + 1) // a line being written waits for the next refresh
		if end <= from {
			continue
		}
		for _, raw := range bytes.Split(b[from:end-1], []byte{'\n'}) {
			var line Line
			require.NoError(t, json.Unmarshal(raw, &line), "%s: line %q", name, raw)
			if completedOK(line) {
				lt.completed = append(lt.completed, time.Unix(0, line.T))
			}
		}
		lt.offsets[name] = end
	}
}

// completions counts the accepted completions in [from, to).
func (lt *logTail) completions(from, to time.Time) int {
	n := 0
	for _, at := range lt.completed {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// firstCompletionAfter is the first accepted completion after t, or zero.
func (lt *logTail) firstCompletionAfter(t time.Time) time.Time {
	var first time.Time
	for _, at := range lt.completed {
		if at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}
