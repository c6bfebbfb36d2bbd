package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fireTimes returns the first n fire times of spec in tz after from, formatted RFC 3339 in
// the spec's zone.
func fireTimes(t *testing.T, spec, tz, from string, n int) []string {
	t.Helper()
	s, err := Parse(spec, tz)
	require.NoError(t, err)
	after, err := time.Parse(time.RFC3339, from)
	require.NoError(t, err)
	var out []string
	for range n {
		after = s.Next(after)
		require.False(t, after.IsZero())
		out = append(out, after.Format(time.RFC3339))
	}
	return out
}

type dstCase struct {
	name, spec, tz, from string
	want                 []string
}

func runDSTCases(t *testing.T, cases []dstCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, fireTimes(t, tc.spec, tc.tz, tc.from, len(tc.want)))
		})
	}
}

// The transitions are the real ones of 2026, checked by TestTransitionsOf2026.

func TestNewYork(t *testing.T) {
	t.Parallel()
	const ny = "America/New_York"
	runDSTCases(t, []dstCase{
		// Spring forward 2026-03-08: 02:00 EST becomes 03:00 EDT.
		{"gap time fires at the jump", "30 2 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"gap time with seconds field", "0 30 2 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"several gap times fire once", "*/15 2 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T02:15:00-04:00"}},
		{"hourly skips the missing hour", "0 * * * *", ny, "2026-03-08T00:30:00-05:00",
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"just before the gap", "59 1 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:59:00-05:00", "2026-03-09T01:59:00-04:00"}},
		{"03:00 fires once", "0 3 * * *", ny, "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T03:00:00-04:00"}},
		{"from the gap's fire time", "30 2 * * *", ny, "2026-03-08T03:00:00-04:00",
			[]string{"2026-03-09T02:30:00-04:00"}},

		// Fall back 2026-11-01: 02:00 EDT becomes 01:00 EST.
		{"repeated time fires on its first occurrence", "30 1 * * *", ny, "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"not again on the second occurrence", "30 1 * * *", ny, "2026-11-01T01:30:00-04:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"from inside the second occurrence", "45 1 * * *", ny, "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-02T01:45:00-05:00"}},
		{"02:00 after the repeated hour", "0 2 * * *", ny, "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-01T02:00:00-05:00"}},
		{"hourly fires each wall hour once", "0 * * * *", ny, "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}},
		{"every 20 minutes through the repeated hour", "*/20 * * * *", ny, "2026-11-01T00:50:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00",
				"2026-11-01T02:00:00-05:00"}},
		{"every second at the fall-back instant", "* * * * * *", ny, "2026-11-01T01:59:58-04:00",
			[]string{"2026-11-01T01:59:59-04:00", "2026-11-01T02:00:00-05:00"}},
	})
}

func TestBerlin(t *testing.T) {
	t.Parallel()
	const berlin = "Europe/Berlin"
	runDSTCases(t, []dstCase{
		// 2026-03-29: 02:00 CET becomes 03:00 CEST.
		{"gap time fires at the jump", "30 2 * * *", berlin, "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"start of the gap", "0 2 * * *", berlin, "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
		{"weekday spec", "30 2 * * SUN", berlin, "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-04-05T02:30:00+02:00"}},
		// 2026-10-25: 03:00 CEST becomes 02:00 CET.
		{"repeated time fires once", "30 2 * * *", berlin, "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"hourly through the repeated hour", "0 * * * *", berlin, "2026-10-25T01:30:00+02:00",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00"}},
	})
}

func TestLordHowe(t *testing.T) {
	t.Parallel()
	const lh = "Australia/Lord_Howe"
	runDSTCases(t, []dstCase{
		// 2026-10-04: 02:00 +10:30 becomes 02:30 +11:00 (a 30-minute gap).
		{"gap time fires at the jump", "15 2 * * *", lh, "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"end of the gap exists", "30 2 * * *", lh, "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:30:00+11:00"}},
		{"gap times and the jump fire once", "0,15,30,45 2 * * *", lh, "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00", "2026-10-05T02:00:00+11:00"}},
		// 2026-04-05: 02:00 +11:00 becomes 01:30 +10:30 (a repeated half hour).
		{"repeated time fires once", "45 1 * * *", lh, "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"quarter hours through the repeat", "*/15 * * * *", lh, "2026-04-05T01:20:00+11:00",
			[]string{"2026-04-05T01:30:00+11:00", "2026-04-05T01:45:00+11:00", "2026-04-05T02:00:00+10:30",
				"2026-04-05T02:15:00+10:30"}},
		{"time before the repeat is unique", "15 1 * * *", lh, "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T01:15:00+11:00", "2026-04-06T01:15:00+10:30"}},
	})
}

func TestMidnightTransitions(t *testing.T) {
	t.Parallel()
	runDSTCases(t, []dstCase{
		// Havana, 2026-03-08 (a Sunday): 00:00 CST becomes 01:00 CDT; that midnight never exists.
		{"missing midnight fires once at the jump", "0 0 * * *", "America/Havana", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},
		{"@daily", "@daily", "America/Havana", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},
		{"@weekly on the Sunday without midnight", "@weekly", "America/Havana", "2026-03-02T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-15T00:00:00-04:00"}},
		{"gap minute", "30 0 * * *", "America/Havana", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:30:00-04:00"}},
		// Havana, 2026-11-01: 01:00 CDT becomes 00:00 CST.
		{"repeated after-midnight hour", "30 0 * * *", "America/Havana", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T00:30:00-04:00", "2026-11-02T00:30:00-05:00"}},
		// Santiago, 2026-04-05: 00:00 -03 becomes 23:00 -04 on the 4th, repeating its last hour.
		{"repeated hour before midnight", "30 23 * * *", "America/Santiago", "2026-04-04T12:00:00-03:00",
			[]string{"2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00"}},
		{"midnight after a repeated hour", "0 0 * * *", "America/Santiago", "2026-04-04T12:00:00-03:00",
			[]string{"2026-04-05T00:00:00-04:00", "2026-04-06T00:00:00-04:00"}},
		// Santiago, 2026-09-06: 00:00 -04 becomes 01:00 -03.
		{"missing midnight in Santiago", "0 0 * * *", "America/Santiago", "2026-09-05T12:00:00-04:00",
			[]string{"2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"}},
		// Nuuk, 2026-03-28: 23:00 -02 becomes 00:00 -01 on the 29th. A time in that gap fires at
		// the first instant after it, which is on the next local day.
		{"gap ending at midnight", "30 23 * * *", "America/Nuuk", "2026-03-27T12:00:00-02:00",
			[]string{"2026-03-27T23:30:00-02:00", "2026-03-29T00:00:00-01:00", "2026-03-29T23:30:00-01:00"}},
	})
}

func TestIntervalsIgnoreDST(t *testing.T) {
	t.Parallel()
	runDSTCases(t, []dstCase{
		{"hourly rate fires twice at wall 01:00", "@every 1h", "America/New_York", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"half-hourly rate over the gap", "@every 30m", "America/New_York", "2026-03-08T01:10:00-05:00",
			[]string{"2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"}},
		{"rate in Lord Howe", "@every 45m", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30",
			[]string{"2026-10-04T01:30:00+10:30", "2026-10-04T02:45:00+11:00", "2026-10-04T03:30:00+11:00"}},
	})

	s, err := NewInterval(time.Hour, KindFixedDelay)
	require.NoError(t, err)
	finish := time.Date(2026, 11, 1, 5, 20, 0, 0, time.UTC) // 01:20 EDT
	require.Equal(t, finish.Add(time.Hour), s.Next(finish))
}

// TestTransitionsOf2026 pins the transitions the tables above rely on, so that a tzdata change
// shows up here rather than as a puzzling table failure.
func TestTransitionsOf2026(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tz, at, before, after string
	}{
		{"America/New_York", "2026-03-08T07:00:00Z", "01:59:59 -0500", "03:00:00 -0400"},
		{"America/New_York", "2026-11-01T06:00:00Z", "01:59:59 -0400", "01:00:00 -0500"},
		{"Europe/Berlin", "2026-03-29T01:00:00Z", "01:59:59 +0100", "03:00:00 +0200"},
		{"Europe/Berlin", "2026-10-25T01:00:00Z", "02:59:59 +0200", "02:00:00 +0100"},
		{"Australia/Lord_Howe", "2026-04-04T15:00:00Z", "01:59:59 +1100", "01:30:00 +1030"},
		{"Australia/Lord_Howe", "2026-10-03T15:30:00Z", "01:59:59 +1030", "02:30:00 +1100"},
		{"America/Havana", "2026-03-08T05:00:00Z", "23:59:59 -0500", "01:00:00 -0400"},
		{"America/Havana", "2026-11-01T05:00:00Z", "00:59:59 -0400", "00:00:00 -0500"},
		{"America/Santiago", "2026-04-05T03:00:00Z", "23:59:59 -0300", "23:00:00 -0400"},
		{"America/Santiago", "2026-09-06T04:00:00Z", "23:59:59 -0400", "01:00:00 -0300"},
		{"America/Nuuk", "2026-03-29T01:00:00Z", "22:59:59 -0200", "00:00:00 -0100"},
	} {
		loc, err := time.LoadLocation(tc.tz)
		require.NoError(t, err)
		at, err := time.Parse(time.RFC3339, tc.at)
		require.NoError(t, err)
		const layout = "15:04:05 -0700"
		require.Equal(t, tc.before, at.Add(-time.Second).In(loc).Format(layout), tc.tz+" "+tc.at)
		require.Equal(t, tc.after, at.In(loc).Format(layout), tc.tz+" "+tc.at)
		start, _ := at.In(loc).ZoneBounds()
		require.True(t, start.Equal(at), "%s: transition at %s, not %s", tc.tz, start.UTC(), at)
	}
}
