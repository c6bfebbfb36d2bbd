package cli

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseSince feeds --since/--until any value. It must never panic; what it refuses is a
// usage error (exit code 2) naming the flag; what it accepts is an RFC 3339 time or a time
// before now.
func FuzzParseSince(f *testing.F) {
	for _, seed := range []string{"1h", "90m", "2026-03-01T12:00:00Z", "2026-03-01T12:00:00+05:30", "-1h", "",
		"1e9h", "9999999999h", "2026-13-01T00:00:00Z", "P1D", "\x00", "1h\xff"} {
		f.Add(seed)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, value string) {
		got, err := parseSince("since", value, now)
		if err != nil {
			if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--since") {
				t.Fatalf("parseSince(%q) = %v (exit %d), want a usage error naming --since", value, err, exitCode(err))
			}
			return
		}
		if _, perr := time.Parse(time.RFC3339, value); perr != nil && got.After(now) {
			t.Fatalf("parseSince(%q) = %s, after now", value, got)
		}
	})
}
