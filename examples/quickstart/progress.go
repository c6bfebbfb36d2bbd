package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
)

// tally counts this run's jobs by state and by kind.
type tally struct {
	total     int
	terminal  int
	byState   map[hopper.JobState]int
	byKind    map[string]map[hopper.JobState]int
	failedJob string // the id of one failed job, to show with the CLI
}

// countJobs pages through the jobs created since start. (The client has no count query;
// listing a few thousand rows is fast enough for a demo.)
func countJobs(ctx context.Context, client *hopper.Client, since time.Time) (*tally, error) {
	t := &tally{byState: map[hopper.JobState]int{}, byKind: map[string]map[hopper.JobState]int{}}
	p := &hopper.ListParams{CreatedAfter: since.Truncate(time.Millisecond), Limit: 10000}
	for {
		page, err := client.List(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		for _, j := range page.Jobs {
			t.add(j)
		}
		if page.NextCursor == "" {
			return t, nil
		}
		p.Cursor = page.NextCursor
	}
}

func (t *tally) add(j *hopper.JobRow) {
	t.total++
	t.byState[j.State]++
	if t.byKind[j.Kind] == nil {
		t.byKind[j.Kind] = map[hopper.JobState]int{}
	}
	t.byKind[j.Kind][j.State]++
	if j.State.Terminal() {
		t.terminal++
	}
	if j.State == hopper.StateFailed && t.failedJob == "" {
		t.failedJob = j.ID
	}
}

// waitTerminal polls until all n jobs have ended, printing progress.
func waitTerminal(ctx context.Context, client *hopper.Client, n int, start time.Time) error {
	line := newStatusLine()
	defer line.end()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		t, err := countJobs(ctx, client, start)
		if err != nil {
			return err
		}
		line.show(fmt.Sprintf("%5.1fs  %d/%d done  %s", time.Since(start).Seconds(), t.terminal, n, states(t.byState)))
		if t.terminal >= n {
			return nil
		}
	}
}

// statusLine rewrites one line on a terminal, and prints a line per update otherwise.
type statusLine struct{ tty bool }

func newStatusLine() *statusLine {
	fi, err := os.Stdout.Stat()
	return &statusLine{tty: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (l *statusLine) show(s string) {
	if l.tty {
		fmt.Printf("\r\033[K%s", s)
		return
	}
	fmt.Println(s)
}

func (l *statusLine) end() {
	if l.tty {
		fmt.Println()
	}
}

// states formats counts in the order of the job life cycle, leaving out zeros.
func states(counts map[hopper.JobState]int) string {
	var parts []string
	for _, s := range []hopper.JobState{
		hopper.StateScheduled, hopper.StateQueued, hopper.StateRunning, hopper.StateSuspended,
		hopper.StateCompleted, hopper.StateFailed, hopper.StateCanceled,
	} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
		}
	}
	return strings.Join(parts, "  ")
}

func printSummary(t *tally, elapsed time.Duration, db string, interrupted bool) {
	if interrupted {
		fmt.Println("interrupted: the jobs that did not end stay in the database for the next run")
	}
	fmt.Printf("\n%d jobs, %d ended in %s (%.0f jobs/s)\n", t.total, t.terminal, elapsed.Round(time.Millisecond),
		float64(t.terminal)/elapsed.Seconds())
	fmt.Printf("  %-14s %s\n", "all", states(t.byState))
	for _, kind := range slices.Sorted(maps.Keys(t.byKind)) {
		fmt.Printf("  %-14s %s\n", kind, states(t.byKind[kind]))
	}
	if t.failedJob != "" {
		dbFlag := ""
		if db != "./hopper.db" {
			dbFlag = " --database " + db
		}
		fmt.Printf("\nA failed job and its attempts:\n  go run ./cmd/hopper%s jobs show %s\n", dbFlag, t.failedJob)
	}
}
