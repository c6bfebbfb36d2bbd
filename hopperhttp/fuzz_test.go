package hopperhttp

import (
	"testing"
)

// FuzzParseWait feeds ?wait= any value: never a panic; a refusal says what is wanted; what is
// accepted is within 0–MaxWait.
func FuzzParseWait(f *testing.F) {
	for _, seed := range []string{"", "10s", "60s", "61s", "-1s", "1h", "1e3s", "10", "\x00", "9223372036854775807ns"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseWait(s)
		if err != nil {
			return
		}
		if d < 0 || d > MaxWait {
			t.Fatalf("parseWait(%q) = %s, outside 0–%s", s, d, MaxWait)
		}
	})
}
