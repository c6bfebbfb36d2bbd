package schedule

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse feeds Parse any spec and time zone. It must never panic; a spec it refuses says so
// with ErrInvalidSpec; a spec it accepts has fire times that strictly increase, come after the
// time asked about, are reported in the spec's zone, and are found without an endless search.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct {
		spec, tz string
		at       int64
	}{
		{"*/5 * * * *", "UTC", 1772366400},
		{"30 2 * * *", "America/New_York", 1772866800},
		{"0 30 1 * * *", "America/New_York", 1793419200},
		{"@daily", "Australia/Lord_Howe", 1775300000},
		{"@every 90s", "", 0},
		{"@every 1h30m", "Europe/Berlin", -1},
		{"0 0 29 2 *", "Pacific/Chatham", 1772366400},
		{"15 0 * * MON-FRI", "America/Havana", 1772366400},
		{"0 0 30 2 *", "UTC", 0},
		{"@every", "UTC", 0},
		{"* * * * * * *", "Local", 0},
		{"0 0 * * *", "Mars/Olympus", 0},
		{"0 \x00 * * *", "UTC", 0},
		{"\xff", "\xff", 0},
	} {
		f.Add(seed.spec, seed.tz, seed.at)
	}
	f.Fuzz(func(t *testing.T, spec, tz string, at int64) {
		s, err := Parse(spec, tz)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Parse(%q, %q) error does not wrap ErrInvalidSpec: %v", spec, tz, err)
			}
			return
		}
		// Stay within years where the search has room (SearchYears) and time.Time is exact.
		after := time.Unix(at%(200*365*24*3600), 0).UTC()
		for range 5 {
			next := s.Next(after)
			if next.IsZero() {
				return
			}
			if !next.After(after) {
				t.Fatalf("Parse(%q, %q).Next(%s) = %s, not after it", spec, tz, after, next)
			}
			if next.Location().String() != s.loc.String() {
				t.Fatalf("Next returned a time in %s, want %s", next.Location(), s.loc)
			}
			after = next
		}
	})
}
