package schedule

import (
	"errors"
	"go/parser"
	"go/token"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSyntax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec, from string
		want             []string
	}{
		{"five fields", "15 10 * * *", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T10:15:00Z", "2026-01-02T10:15:00Z"}},
		{"six fields with seconds", "*/20 0 10 * * *", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T10:00:00Z", "2026-01-01T10:00:20Z", "2026-01-01T10:00:40Z", "2026-01-02T10:00:00Z"}},
		{"lists and ranges", "0 8-9,17 * * *", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T08:00:00Z", "2026-01-01T09:00:00Z", "2026-01-01T17:00:00Z"}},
		{"range with step", "0 8-18/5 * * *", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T08:00:00Z", "2026-01-01T13:00:00Z", "2026-01-01T18:00:00Z"}},
		{"weekday names", "0 9 * * MON-FRI", "2026-01-02T12:00:00Z", // a Friday
			[]string{"2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z"}},
		{"month names", "0 0 1 jan,jul *", "2026-01-02T00:00:00Z",
			[]string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"day of month OR day of week", "0 0 10 * FRI", "2026-02-01T00:00:00Z",
			[]string{"2026-02-06T00:00:00Z", "2026-02-10T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z",
				"2026-02-27T00:00:00Z", "2026-03-06T00:00:00Z", "2026-03-10T00:00:00Z"}},
		{"29 February", "0 0 29 2 *", "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"29 February across 2100", "0 0 29 2 *", "2097-01-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z"}},
		{"@yearly", "@yearly", "2026-05-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@annually", "@annually", "2026-05-01T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@monthly", "@monthly", "2026-05-01T00:00:00Z", []string{"2026-06-01T00:00:00Z"}},
		{"@weekly", "@weekly", "2026-05-01T00:00:00Z", []string{"2026-05-03T00:00:00Z"}},
		{"@daily", "@daily", "2026-05-01T00:00:00Z", []string{"2026-05-02T00:00:00Z"}},
		{"@midnight", "@midnight", "2026-05-01T00:00:00Z", []string{"2026-05-02T00:00:00Z"}},
		{"@hourly", "@hourly", "2026-05-01T00:00:00Z", []string{"2026-05-01T01:00:00Z"}},
		{"@every", "@every 1h30m", "2026-05-01T00:10:00Z",
			[]string{"2026-05-01T01:30:00Z", "2026-05-01T03:00:00Z"}},
		{"surrounding space", "  0 12 * * *  ", "2026-05-01T00:00:00Z", []string{"2026-05-01T12:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, fireTimes(t, tc.spec, "UTC", tc.from, len(tc.want)))
		})
	}
}

func TestParseKinds(t *testing.T) {
	t.Parallel()
	cronSpec, err := Parse("0 9 * * *", "Europe/Berlin")
	require.NoError(t, err)
	require.Equal(t, KindCron, cronSpec.Kind())
	require.Equal(t, "0 9 * * *", cronSpec.String())
	require.Equal(t, "Europe/Berlin", cronSpec.Location().String())
	require.Zero(t, cronSpec.Interval())
	require.False(t, cronSpec.FromFinish())

	rate, err := Parse("@every 90s", "")
	require.NoError(t, err)
	require.Equal(t, KindFixedRate, rate.Kind())
	require.Equal(t, 90*time.Second, rate.Interval())
	require.Equal(t, time.UTC, rate.Location())
	require.Equal(t, "@every 1m30s", rate.String())
	require.False(t, rate.FromFinish())

	delay, err := NewInterval(time.Minute, KindFixedDelay)
	require.NoError(t, err)
	require.Equal(t, KindFixedDelay, delay.Kind())
	require.True(t, delay.FromFinish())
	require.Equal(t, "fixed-delay", delay.Kind().String())

	again, err := Parse(rate.String(), "")
	require.NoError(t, err)
	require.Equal(t, rate, again)
}

func TestWithAnchor(t *testing.T) {
	t.Parallel()
	rate, err := NewInterval(time.Hour, KindFixedRate)
	require.NoError(t, err)
	anchor := time.Date(2026, 1, 1, 0, 20, 0, 0, time.UTC)
	anchored := rate.WithAnchor(anchor)
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	require.Equal(t, time.Date(2026, 6, 1, 13, 0, 0, 0, time.UTC), rate.Next(from), "the original is unchanged")
	require.Equal(t, time.Date(2026, 6, 1, 12, 20, 0, 0, time.UTC), anchored.Next(from))
	require.Equal(t, anchor, anchored.Next(anchor.Add(-time.Nanosecond)), "before the anchor too")
	require.Equal(t, anchor.Add(-time.Hour), anchored.Next(anchor.Add(-time.Hour-time.Nanosecond)))

	cronSpec, err := Parse("@daily", "")
	require.NoError(t, err)
	require.Same(t, cronSpec, cronSpec.WithAnchor(anchor))
}

func TestNextFarFromAnchor(t *testing.T) {
	t.Parallel()
	rate, err := NewInterval(7*time.Second, KindFixedRate)
	require.NoError(t, err)
	// Over 292 years from the epoch a time.Duration overflows; the arithmetic must not.
	for _, from := range []time.Time{{}, time.Date(2500, 3, 1, 0, 0, 0, 1, time.UTC)} {
		next := rate.Next(from)
		require.True(t, next.After(from))
		require.LessOrEqual(t, next.Sub(from), 7*time.Second)
		require.Zero(t, next.Unix()%7)
		require.Zero(t, next.Nanosecond())
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, tz, want string
	}{
		{"", "", `"" has 0 fields; want 5`},
		{"* * * *", "", "has 4 fields"},
		{"* * * * * * *", "", "has 7 fields"},
		{"61 * * * *", "", `minute field "61"`},
		{"0 60 * * * *", "", `minute field "60"`},
		{"60 * * * * *", "", `second field "60"`},
		{"0 24 * * *", "", `hour field "24"`},
		{"0 0 32 * *", "", `day-of-month field "32"`},
		{"0 0 0 * *", "", `day-of-month field "0"`},
		{"0 0 * 13 *", "", `month field "13"`},
		{"0 0 * JANX *", "", `month field "JANX"`},
		{"0 0 * * 8", "", `day-of-week field "8"`},
		{"0 0 * * FUNDAY", "", `day-of-week field "FUNDAY": want numbers 0-6 (0 is Sunday) or names SUN-SAT`},
		{"0 0 * * 5#2", "", `day-of-week field "5#2"`},
		{"0 0 L * *", "", `day-of-month field "L": want numbers`},
		{"0 1-2-3 * * *", "", `hour field "1-2-3": too many hyphens`},
		{"*/0 * * * *", "", `minute field "*/0"`},
		{"5-1 * * * *", "", `minute field "5-1"`},
		{"0 0 30 2 *", "", "never fires"},
		{"0 0 31 4,6,9,11 *", "", "never fires"},
		{"@reboot", "", "unknown descriptor"},
		{"@every", "", `want "@every DURATION"`},
		{"@every5m", "", `want "@every DURATION"`},
		{"@every 5 minutes", "", `bad duration "5 minutes"`},
		{"@every 500ms", "", "interval 500ms is shorter than 1s"},
		{"@every -1h", "", "shorter than 1s"},
		{"CRON_TZ=Europe/Berlin 0 0 * * *", "", "give the time zone separately"},
		{"0 0 * * *", "Mars/Olympus_Mons", `unknown time zone "Mars/Olympus_Mons"`},
		{"0 0 * * *", "Local", `time zone "Local" depends on the machine`},
		{"0 0 * * *", "europe/berlin", "unknown time zone"},
	} {
		t.Run(tc.spec+"/"+tc.tz, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.spec, tc.tz)
			require.Nil(t, s)
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNewIntervalErrors(t *testing.T) {
	t.Parallel()
	_, err := NewInterval(999*time.Millisecond, KindFixedDelay)
	require.ErrorIs(t, err, ErrInvalidSpec)
	_, err = NewInterval(time.Minute, KindCron)
	require.ErrorIs(t, err, ErrInvalidSpec)
	require.ErrorContains(t, err, "fixed-rate or fixed-delay")
	require.True(t, errors.Is(err, ErrInvalidSpec))
}

// TestEmbedsTZData: schedules name IANA zones, and a node without /usr/share/zoneinfo must
// compute the same fire times as the others.
func TestEmbedsTZData(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "spec.go", nil, parser.ImportsOnly)
	require.NoError(t, err)
	var imports []string
	for _, imp := range f.Imports {
		imports = append(imports, imp.Path.Value)
	}
	require.Contains(t, imports, `"time/tzdata"`)
}
