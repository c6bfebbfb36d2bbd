package field

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven …"},
		{"ééééé", 8, "éé…"}, // 10 bytes; 5 left for text: two runes, not one and a half
		{"a\x00b\xff", 20, "a\uFFFDb\uFFFD"},
		{"a\x00b\xffcdef", 8, "a\uFFFDb…"}, // cleaned first, then cut
		{"abcdef", 3, "abc"},
		{"éé", 3, "é"},
		{"abc", 0, ""},
	} {
		got := Clip(c.in, c.limit)
		require.Equal(t, c.want, got, "Clip(%q, %d)", c.in, c.limit)
	}
}

// FuzzClip: whatever the text and the limit, the result is storable text within the
// limit, and a prefix of the cleaned text (with the mark when it was cut).
func FuzzClip(f *testing.F) {
	for _, seed := range []struct {
		s     string
		limit int
	}{{"", 0}, {"hello", 3}, {"ééé", 4}, {"a\x00\xff😀", 6}, {strings.Repeat("日本", 100), 4096}} {
		f.Add(seed.s, seed.limit)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit %= 1 << 16
		got := Clip(s, limit)
		clean := Clean(s)
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0) {
			t.Fatalf("Clip(%q, %d) = %q: not storable text", s, limit, got)
		}
		if len(clean) <= max(limit, 0) {
			if got != clean {
				t.Fatalf("Clip(%q, %d) = %q, want it whole: %q", s, limit, got, clean)
			}
			return
		}
		if len(got) > max(limit, 0) {
			t.Fatalf("Clip(%q, %d) = %q: %d bytes", s, limit, got, len(got))
		}
		if !strings.HasPrefix(clean, strings.TrimSuffix(got, "…")) {
			t.Fatalf("Clip(%q, %d) = %q: not a prefix of %q", s, limit, got, clean)
		}
	})
}
