package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// dstZones observe DST in 2026 with transitions of different shapes: at 02:00 or 03:00, at
// local midnight (Havana, Santiago, Beirut, Cairo), by 30 minutes (Lord Howe), at :45
// (Chatham), in the southern hemisphere. None has a gap that ends on the next local day
// (Nuuk's does: see TestMidnightTransitions), so a daily spec fires on every local day.
var dstZones = []string{
	"America/New_York", "Europe/Berlin", "Europe/London", "Australia/Lord_Howe", "Australia/Sydney",
	"America/Havana", "America/Santiago", "Asia/Beirut", "Africa/Cairo", "Pacific/Chatham",
	"America/St_Johns", "Pacific/Auckland", "Asia/Jerusalem",
}

// allZones adds a gap ending at midnight and zones without DST.
var allZones = append([]string{"UTC", "America/Nuuk", "Asia/Kolkata", "Asia/Kathmandu"}, dstZones...)

func mustLoad(t require.TestingT, tz string) *time.Location {
	loc, err := time.LoadLocation(tz)
	require.NoError(t, err)
	return loc
}

// cronField draws one field of a cron expression with values in [lo, hi].
func cronField(t *rapid.T, name string, lo, hi int) string {
	a := rapid.IntRange(lo, hi).Draw(t, name+"_a")
	b := rapid.IntRange(a, hi).Draw(t, name+"_b")
	step := rapid.IntRange(1, hi-lo+1).Draw(t, name+"_step")
	return rapid.SampledFrom([]string{
		"*", fmt.Sprint(a), fmt.Sprintf("%d-%d", a, b), fmt.Sprintf("*/%d", step),
		fmt.Sprintf("%d,%d", a, b), fmt.Sprintf("%d-%d/%d", a, b, step),
	}).Draw(t, name)
}

// drawTime draws an instant in 2025–2027, to the second or to the nanosecond.
func drawTime(t *rapid.T, name string) time.Time {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := rapid.Int64Range(0, 3*365*86400).Draw(t, name+"_sec")
	ns := rapid.SampledFrom([]int64{0, 0, 1, 999_999_999}).Draw(t, name+"_ns")
	return start.Add(time.Duration(sec)*time.Second + time.Duration(ns))
}

// TestPropertyCronStrictlyIncreases: fire times strictly increase; starting anywhere between
// two fire times gives the second; every fire time shows a matching wall-clock time, unless
// it is the first instant after a gap that skipped one, and is the first instant to show it
// (the zones' fall-backs are 30 or 60 minutes).
func TestPropertyCronStrictlyIncreases(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		fields := []string{
			cronField(t, "minute", 0, 59), cronField(t, "hour", 0, 23), cronField(t, "dom", 1, 28),
			cronField(t, "month", 1, 12), cronField(t, "dow", 0, 6),
		}
		if rapid.Bool().Draw(t, "seconds") {
			fields = append([]string{cronField(t, "second", 0, 59)}, fields...)
		}
		tz := rapid.SampledFrom(allZones).Draw(t, "tz")
		s, err := Parse(strings.Join(fields, " "), tz)
		require.NoError(t, err)
		prev := drawTime(t, "from")
		if rapid.Bool().Draw(t, "near_transition") {
			prev = nearTransition(t, tz)
		}
		for range 30 {
			next := s.Next(prev)
			require.False(t, next.IsZero())
			require.True(t, next.After(prev), "%s after %s", next, prev)
			require.Equal(t, s.loc, next.Location())
			w := civil(next)
			if !s.match.matches(w) {
				start, _ := next.ZoneBounds()
				require.True(t, start.Equal(next), "%s matches %s neither on the clock nor as a gap's end", next, s)
			}
			for _, back := range []time.Duration{30 * time.Minute, time.Hour} {
				require.False(t, civil(next.Add(-back)).Equal(w), "%s is not the first instant showing its wall time", next)
			}
			between := prev.Add(time.Duration(rapid.Int64Range(0, int64(next.Sub(prev))-1).Draw(t, "between")))
			require.Equal(t, next, s.Next(between))
			prev = next
		}
	})
}

// TestPropertyDailyOncePerDay: "M H * * *" fires exactly once on every local day of 2026.
func TestPropertyDailyOncePerDay(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(0, 59).Draw(t, "minute")
		h := rapid.IntRange(0, 23).Draw(t, "hour")
		tz := rapid.SampledFrom(dstZones).Draw(t, "tz")
		s, err := Parse(fmt.Sprintf("%d %d * * *", m, h), tz)
		require.NoError(t, err)
		loc := mustLoad(t, tz)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Add(-time.Nanosecond)
		until := time.Date(2027, 1, 1, 0, 0, 0, 0, loc).Add(-time.Nanosecond)
		fires := s.Between(from, until, 1000)
		require.Len(t, fires, 365)
		day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, f := range fires {
			require.Equal(t, day.Format(time.DateOnly), f.Format(time.DateOnly), "%s in %s", s, tz)
			day = day.AddDate(0, 0, 1)
		}
	})
}

// TestPropertyEveryExactMultiples: "@every D" fires at exact multiples of D since its anchor,
// D apart, in real elapsed time whatever the zone.
func TestPropertyEveryExactMultiples(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.Int64Range(int64(time.Second), int64(50*time.Hour)).Draw(t, "interval"))
		tz := rapid.SampledFrom(allZones).Draw(t, "tz")
		s, err := Parse("@every "+d.String(), tz)
		require.NoError(t, err)
		anchor := time.Unix(0, 0)
		if rapid.Bool().Draw(t, "anchored") {
			anchor = drawTime(t, "anchor")
			s = s.WithAnchor(anchor)
		}
		prev := drawTime(t, "from")
		first := s.Next(prev)
		require.True(t, first.After(prev))
		require.LessOrEqual(t, first.Sub(prev), d)
		for i, f := range s.Between(prev, prev.Add(100*d), 100) {
			require.Equal(t, first.Add(time.Duration(i)*d), f)
			require.Zero(t, f.Sub(anchor)%d, "%s is not anchor + k·%s", f, d)
		}
	})
}

// TestPropertyDueAllLosesNothing: a leader ticking at random, sometimes long, intervals with
// catch-up "all" enqueues every fire time exactly once, in order.
func TestPropertyDueAllLosesNothing(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		spec := rapid.SampledFrom([]string{"* * * * * *", "*/7 * * * * *", "0 * * * *", "30 1 * * *",
			"@every 13s"}).Draw(t, "spec")
		s, err := Parse(spec, rapid.SampledFrom(dstZones).Draw(t, "tz"))
		require.NoError(t, err)
		start := time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC).Add(
			time.Duration(rapid.Int64Range(0, 86400).Draw(t, "offset")) * time.Second)
		last, now := start, start
		var got []time.Time
		for range 25 {
			now = now.Add(time.Duration(rapid.Int64Range(0, 1800).Draw(t, "tick")) * time.Second)
			fires, through := Due(s, last, now, CatchUpAll, time.Second)
			got = append(got, fires...)
			last = through
		}
		want := s.Between(start, last, 1_000_000)
		require.Equal(t, want, got)
	})
}

// nearTransition draws an instant from 3 hours before to 1 hour after one of tz's 2026
// transitions (or any 2026 instant in a zone without DST).
func nearTransition(t *rapid.T, tz string) time.Time {
	loc := mustLoad(t, tz)
	var transitions []time.Time
	for at := time.Date(2026, 1, 1, 0, 0, 0, 0, loc); at.Year() == 2026; {
		_, end := at.ZoneBounds()
		if end.IsZero() {
			break
		}
		transitions = append(transitions, end)
		at = end
	}
	if len(transitions) == 0 {
		return drawTime(t, "from_no_transition")
	}
	at := rapid.SampledFrom(transitions).Draw(t, "transition")
	return at.Add(time.Duration(rapid.Int64Range(-3*3600, 3600).Draw(t, "from_offset")) * time.Second)
}

func (m matcher) matches(c time.Time) bool {
	return has(m.month, int(c.Month())) && m.dayMatches(c) && has(m.hour, c.Hour()) &&
		has(m.minute, c.Minute()) && has(m.second, c.Second())
}
