package cli

import (
	"fmt"
	"time"
)

const (
	// tableTime is one word, so that a table's columns split on blanks (awk, cut -w).
	tableTime  = "2006-01-02T15:04:05"
	detailTime = "2006-01-02 15:04:05.000 MST"
)

// showTime formats t in local time for people; "-" for a zero time.
func showTime(t time.Time, layout string) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(layout)
}

// relative says how far t is from now: "in 3s", "2m10s ago".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d > 0:
		return "in " + roundDuration(d).String()
	case d < 0:
		return roundDuration(-d).String() + " ago"
	}
	return "now"
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// parseSince reads a --since or --until value: an RFC 3339 time, or a duration meaning that
// long before now ("1h").
func parseSince(flag, value string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, value); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return time.Time{}, usageErrorf("invalid --%s: %q is neither an RFC 3339 time nor a duration like 1h", flag, value)
	}
	return now.Add(-d), nil
}

// attemptCount is "n/max".
func attemptCount(n, maxAttempts int) string { return fmt.Sprintf("%d/%d", n, maxAttempts) }

// rescueCount shows a job's rescues against its bound (-1: unbounded).
func rescueCount(n, maxRescues int) string {
	if maxRescues < 0 {
		return fmt.Sprintf("%d (no limit)", n)
	}
	return fmt.Sprintf("%d/%d", n, maxRescues)
}
