package bench

import (
	"fmt"
	"math"
)

// RisingAbove is the rise, in percent of the first rows' mean, over which a series is
// rising rather than flat.
const RisingAbove = 10.0

// Verdict says whether one series of the rows stayed flat: the mean of its last rows against
// the mean of its first rows (the rows after the warm-up).
type Verdict struct {
	Series    string  `json:"series"` // the row's JSON name
	First     float64 `json:"first"`
	Last      float64 `json:"last"`
	ChangePct float64 `json:"change_pct"`
	Rising    bool    `json:"rising"`
	Text      string  `json:"verdict"` // "flat" or "rising +x %"
}

// soakSeries are the series the verdicts judge, by the row's JSON name. ok is false for a
// figure that was not read.
var soakSeries = []struct {
	name  string
	value func(r SoakRow) (v float64, ok bool)
}{
	{"latency_p50_ms", func(r SoakRow) (float64, bool) { return r.LatencyP50Ms, r.Enqueued > 0 }},
	{"latency_p99_ms", func(r SoakRow) (float64, bool) { return r.LatencyP99Ms, r.Enqueued > 0 }},
	{"claim_p99_ms", func(r SoakRow) (float64, bool) { return r.ClaimP99Ms, r.Claims > 0 }},
	{"sweep_max_ms", func(r SoakRow) (float64, bool) { return r.SweepMaxMs, true }},
	{"rss_bytes", func(r SoakRow) (float64, bool) { return float64(r.RSSBytes), r.RSSBytes > 0 }},
	{"goroutines_min", func(r SoakRow) (float64, bool) { return float64(r.GoroutinesMin), true }},
	{"heap_inuse_bytes", func(r SoakRow) (float64, bool) { return float64(r.HeapInuseBytes), true }},
	{"heap_live_bytes", func(r SoakRow) (float64, bool) { return float64(r.HeapLiveBytes), true }},
	{"db_bytes", func(r SoakRow) (float64, bool) { return float64(r.DBBytes), r.DBBytes >= 0 }},
	{"wal_bytes", func(r SoakRow) (float64, bool) { return float64(r.WALBytes), r.WALBytes >= 0 }},
	{"jobs_rows", func(r SoakRow) (float64, bool) { return float64(r.JobsRows), r.JobsRows >= 0 }},
}

// verdicts judges each series of rows: the mean of the first 5 rows against the mean of the
// last 5, or of the first and last fifth (rounded up) of fewer than 21 rows. It returns the
// verdicts and the number of rows averaged at each end.
func verdicts(rows []SoakRow) ([]Verdict, int) {
	if len(rows) < 2 {
		return nil, 0
	}
	k := min(5, (len(rows)+4)/5)
	var out []Verdict
	for _, s := range soakSeries {
		first, okFirst := mean(rows[:k], s.value)
		last, okLast := mean(rows[len(rows)-k:], s.value)
		if okFirst && okLast {
			out = append(out, judge(s.name, first, last))
		}
	}
	return out, k
}

// mean is the mean of the figures of rows that were read; ok is false when none was.
func mean(rows []SoakRow, value func(SoakRow) (float64, bool)) (m float64, ok bool) {
	n := 0
	for _, r := range rows {
		if v, read := value(r); read {
			m += v
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return m / float64(n), true
}

// judge compares the means of a series' first and last rows. A series that was 0 and is not
// is rising with no percentage (ChangePct 0).
func judge(name string, first, last float64) Verdict {
	v := Verdict{Series: name, First: first, Last: last, Text: "flat"}
	switch {
	case first == 0 && last > 0:
		v.Rising, v.Text = true, "rising (from 0)"
	case first != 0:
		v.ChangePct = (last - first) / math.Abs(first) * 100
		if v.ChangePct > RisingAbove {
			v.Rising, v.Text = true, fmt.Sprintf("rising %+.0f %%", v.ChangePct)
		}
	}
	return v
}
