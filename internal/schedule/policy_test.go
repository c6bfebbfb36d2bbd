package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func utc(hour, minute, second int) time.Time {
	return time.Date(2026, 1, 1, hour, minute, second, 0, time.UTC)
}

func mustParse(t *testing.T, spec, tz string) *Spec {
	t.Helper()
	s, err := Parse(spec, tz)
	require.NoError(t, err)
	return s
}

func TestDue(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "0 * * * *", "UTC")
	hours := func(hs ...int) []time.Time {
		var out []time.Time
		for _, h := range hs {
			out = append(out, utc(h, 0, 0))
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		last, now   time.Time
		policy      CatchUp
		want        []time.Time
		wantThrough time.Time
	}{
		{"nothing due", utc(0, 0, 0), utc(0, 30, 0), CatchUpAll, nil, utc(0, 0, 0)},
		{"on time", utc(0, 0, 0), utc(1, 0, 0), CatchUpSkip, hours(1), utc(1, 0, 0)},
		{"a late tick within grace is on time", utc(0, 0, 0), utc(1, 0, 59), CatchUpSkip, hours(1), utc(1, 0, 0)},
		{"zero policy is skip", utc(0, 0, 0), utc(1, 0, 59), "", hours(1), utc(1, 0, 0)},
		{"skip: missed beyond grace", utc(0, 0, 0), utc(5, 30, 0), CatchUpSkip, nil, utc(5, 0, 0)},
		{"skip: only the on-time one", utc(0, 0, 0), utc(5, 0, 30), CatchUpSkip, hours(5), utc(5, 0, 0)},
		{"last: the most recent missed", utc(0, 0, 0), utc(5, 30, 0), CatchUpLast, hours(5), utc(5, 0, 0)},
		{"last: on time wins", utc(0, 0, 0), utc(5, 0, 30), CatchUpLast, hours(5), utc(5, 0, 0)},
		{"all: every missed, oldest first", utc(0, 0, 0), utc(5, 30, 0), CatchUpAll, hours(1, 2, 3, 4, 5), utc(5, 0, 0)},
		{"fire time equal to now is due", utc(0, 0, 0), utc(2, 0, 0), CatchUpAll, hours(1, 2), utc(2, 0, 0)},
		{"last fire is not due again", utc(2, 0, 0), utc(2, 0, 30), CatchUpAll, nil, utc(2, 0, 0)},
		{"zero last: only the on-time window", time.Time{}, utc(5, 0, 30), CatchUpAll, hours(5), utc(5, 0, 0)},
		{"zero last: nothing on time", time.Time{}, utc(5, 30, 0), CatchUpLast, nil, time.Time{}},
		{"last after now", utc(6, 0, 0), utc(5, 30, 0), CatchUpAll, nil, utc(6, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fires, through := Due(hourly, tc.last, tc.now, tc.policy, 0)
			require.Equal(t, tc.want, fires)
			if tc.wantThrough.IsZero() {
				require.Equal(t, tc.now.Add(-DefaultGrace), through)
				return
			}
			require.Equal(t, tc.wantThrough, through)
		})
	}
}

func TestDueGraceWindow(t *testing.T) {
	t.Parallel()
	hourly := mustParse(t, "0 * * * *", "UTC")
	fires, _ := Due(hourly, utc(0, 0, 0), utc(1, 4, 0), CatchUpSkip, 5*time.Minute)
	require.Equal(t, []time.Time{utc(1, 0, 0)}, fires)
	fires, through := Due(hourly, utc(0, 0, 0), utc(1, 6, 0), CatchUpSkip, 5*time.Minute)
	require.Empty(t, fires)
	require.Equal(t, utc(1, 0, 0), through)

	// A frequent spec has several on-time fire times per tick; skip runs them all.
	everySecond := mustParse(t, "* * * * * *", "UTC")
	fires, through = Due(everySecond, utc(0, 0, 0), utc(1, 0, 0), CatchUpSkip, 5*time.Second)
	require.Equal(t, []time.Time{utc(0, 59, 56), utc(0, 59, 57), utc(0, 59, 58), utc(0, 59, 59), utc(1, 0, 0)}, fires)
	require.Equal(t, utc(1, 0, 0), through)
}

func TestDueCapsAtMaxCatchUp(t *testing.T) {
	t.Parallel()
	everySecond := mustParse(t, "* * * * * *", "UTC")
	last, now := utc(0, 0, 0), utc(2, 0, 0)
	fires, through := Due(everySecond, last, now, CatchUpAll, 0)
	require.Len(t, fires, MaxCatchUp)
	require.Equal(t, last.Add(time.Second), fires[0])
	require.Equal(t, last.Add(MaxCatchUp*time.Second), through)

	fires, through = Due(everySecond, through, now, CatchUpAll, 0)
	require.Len(t, fires, MaxCatchUp)
	require.Equal(t, last.Add(MaxCatchUp*time.Second+time.Second), fires[0])

	fires, through = Due(everySecond, last, now, CatchUpSkip, 2*time.Hour)
	require.Len(t, fires, MaxCatchUp)
	require.Equal(t, fires[len(fires)-1], through)
}

// TestDueLastAfterLongDowntime: finding the most recent missed fire time does not walk every
// fire time of a year.
func TestDueLastAfterLongDowntime(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 6, 1, 12, 0, 0, 500, time.UTC)
	for _, tc := range []struct {
		spec, want string
		maxCalls   int // of Next; walking every fire time would take the number in the comment
	}{
		{"* * * * * *", "2027-06-01T12:00:00Z", 10}, // 63,072,000
		{"0 0 1 1 *", "2027-01-01T00:00:00Z", 20},   // 2
		{"* * 1 1 *", "2027-01-01T23:59:00Z", 1500}, // 2,880; the last window holds 1,440
		{"@every 7s", "2027-06-01T11:59:55Z", 10},   // 9,010,285 (1811851200 = 7·258835885 + 5)
	} {
		s := mustParse(t, tc.spec, "UTC")
		fires, through := Due(s, now.AddDate(-2, 0, 0), now, CatchUpLast, time.Nanosecond)
		require.Len(t, fires, 1, tc.spec)
		require.Equal(t, tc.want, fires[0].Format(time.RFC3339), tc.spec)
		require.Equal(t, fires[0], through)

		// The cost is counted in steps of Next, not timed: a few per window looked at, plus the
		// fire times of the last window, never one per missed fire time.
		calls := 0
		latest, ok := latestDue(func(at time.Time) time.Time { calls++; return s.Next(at) }, now.AddDate(-2, 0, 0), now)
		require.True(t, ok, tc.spec)
		require.Equal(t, fires[0], latest, tc.spec)
		require.LessOrEqual(t, calls, tc.maxCalls, tc.spec)
	}
}

func TestDueFixedDelay(t *testing.T) {
	t.Parallel()
	delay, err := NewInterval(5*time.Minute, KindFixedDelay)
	require.NoError(t, err)
	finished := utc(10, 0, 0)
	for _, policy := range []CatchUp{CatchUpSkip, CatchUpLast, CatchUpAll} {
		fires, through := Due(delay, finished, utc(10, 4, 0), policy, 0)
		require.Empty(t, fires)
		require.Equal(t, finished, through)

		fires, through = Due(delay, finished, utc(13, 0, 0), policy, 0)
		require.Equal(t, []time.Time{utc(10, 5, 0)}, fires, "one fire, however late")
		require.Equal(t, utc(10, 5, 0), through)
	}
}

func TestDueAcrossFallBack(t *testing.T) {
	t.Parallel()
	// A leader down from 00:30 to 03:30 EDT-then-EST on 2026-11-01 catches up the wall-clock
	// hours it missed, each once.
	s := mustParse(t, "0 * * * *", "America/New_York")
	last := time.Date(2026, 11, 1, 4, 30, 0, 0, time.UTC) // 00:30 EDT
	now := time.Date(2026, 11, 1, 8, 30, 0, 0, time.UTC)  // 03:30 EST
	fires, _ := Due(s, last, now, CatchUpAll, 0)
	var got []string
	for _, f := range fires {
		got = append(got, f.Format(time.RFC3339))
	}
	require.Equal(t, []string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}, got)
}

func TestParsePolicies(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]CatchUp{"": CatchUpSkip, "skip": CatchUpSkip, "last": CatchUpLast, "all": CatchUpAll} {
		got, err := ParseCatchUp(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseCatchUp("some")
	require.ErrorIs(t, err, ErrInvalidPolicy)
	require.ErrorContains(t, err, `catch-up "some"`)

	for in, want := range map[string]Overlap{"": OverlapSkip, "skip": OverlapSkip, "allow": OverlapAllow} {
		got, err := ParseOverlap(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err = ParseOverlap("queue")
	require.ErrorIs(t, err, ErrInvalidPolicy)
}

func TestOverlapAllows(t *testing.T) {
	t.Parallel()
	require.True(t, OverlapSkip.Allows(false))
	require.False(t, OverlapSkip.Allows(true))
	require.False(t, Overlap("").Allows(true), "the zero value skips")
	require.True(t, OverlapAllow.Allows(true))
	require.True(t, OverlapAllow.Allows(false))
}

func TestJitter(t *testing.T) {
	t.Parallel()
	fire := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	require.Zero(t, Jitter(fire, 0, "nightly"))
	require.Zero(t, Jitter(fire, -time.Second, "nightly"))

	const maxJitter = 10 * time.Minute
	j := Jitter(fire, maxJitter, "nightly")
	require.Equal(t, j, Jitter(fire, maxJitter, "nightly"), "deterministic")
	require.Equal(t, j, Jitter(fire.In(mustLoad(t, "America/New_York")), maxJitter, "nightly"), "the zone does not matter")

	// Spread over [0, max): the mean of many fire times is near max/2, and keys differ.
	var sum time.Duration
	differ := 0
	const n = 2000
	for i := range n {
		f := fire.Add(time.Duration(i) * time.Hour)
		d := Jitter(f, maxJitter, "nightly")
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.Less(t, d, maxJitter)
		sum += d
		if d != Jitter(f, maxJitter, "hourly") {
			differ++
		}
	}
	mean := sum / n
	require.InDelta(t, float64(maxJitter/2), float64(mean), float64(maxJitter/20))
	require.Greater(t, differ, n*9/10)
}
