//go:build chaos

package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// row is one scenario's figures, a row of the table in docs/reliability.md.
type row struct {
	Scenario string
	Result   string // PASS, FAIL or SKIP, set when the test ends
	Jobs     string // acknowledged jobs (and what else was counted)
	Lost     string
	Dups     string // duplicate runs with their causes
	Recovery string
	Outage   string // log lines, lines/s and CPU of the server during outages
	Notes    string
}

var table struct {
	mu   sync.Mutex
	rows []*row
}

// figures starts the row of t's scenario; it is printed when t ends, with its result.
func figures(t *testing.T) *row {
	r := &row{Scenario: t.Name(), Jobs: "–", Lost: "–", Dups: "–", Recovery: "–", Outage: "–"}
	start := time.Now()
	t.Cleanup(func() {
		switch {
		case t.Skipped():
			r.Result = "SKIP"
		case t.Failed():
			r.Result = "FAIL"
		default:
			r.Result = "PASS"
		}
		table.mu.Lock()
		table.rows = append(table.rows, r)
		table.mu.Unlock()
		t.Logf("figures: %s | %s | jobs %s | lost %s | duplicates %s | recovery %s | outage %s | %s (%s)",
			r.Scenario, r.Result, r.Jobs, r.Lost, r.Dups, r.Recovery, r.Outage, r.Notes,
			time.Since(start).Round(time.Second))
	})
	return r
}

// note adds a remark to the row.
func (r *row) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if r.Notes == "" {
		r.Notes = s
	} else {
		r.Notes += "; " + s
	}
}

// printTable writes every row as a Markdown table.
func printTable(w io.Writer) {
	table.mu.Lock()
	defer table.mu.Unlock()
	if len(table.rows) == 0 {
		return
	}
	sort.SliceStable(table.rows, func(i, j int) bool { return table.rows[i].Scenario < table.rows[j].Scenario })
	fmt.Fprintf(w, "\nchaos figures (%s variant, %s):\n\n", variant(), time.Now().Format(time.DateOnly))
	fmt.Fprintln(w, "| scenario | result | jobs | lost | duplicates (causes) | recovery | during outages | notes |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range table.rows {
		cells := []string{r.Scenario, r.Result, r.Jobs, r.Lost, r.Dups, r.Recovery, r.Outage, r.Notes}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// secs formats a duration as seconds: two decimals under 10 s, one above.
func secs(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// durationsText sums up durations: "max 4.1 s, median 2.0 s (n=5)".
func durationsText(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("max %s, median %s (n=%d)", secs(s[len(s)-1]), secs(s[len(s)/2]), len(s))
}
