package store

import (
	"errors"
	"github.com/hopperjobs/hopper/internal/field"
	"testing"
)

// FuzzDecodeCursor feeds the list cursors any text (a client sends them back as it likes): no
// panic; a refusal wraps ErrInvalidCursor; an accepted job cursor names a job id that is
// text, and the cursor issued for that id decodes to it again; an accepted audit-log cursor
// decodes again to the same row.
func FuzzDecodeCursor(f *testing.F) {
	for _, seed := range []string{"", EncodeCursor("0190f1c2-7d3e-7c1a-9a51-3f0c2a1b4d5e"), EncodeReplayCursor(42),
		EncodeCursor("replay:-1"), EncodeCursor("replay:+7"), EncodeCursor("replay:9223372036854775808"),
		EncodeCursor("a\x00b"), EncodeCursor("caf\xe9"), EncodeCursor(""), "aG9wcGVyLWxpc3QtdjE6eB", "!!", "====",
		"aG9wcGVyLWxpc3QtdjE6eA=="} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, c string) {
		id, err := DecodeCursor(c)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("DecodeCursor(%q) = %v, not ErrInvalidCursor", c, err)
			}
		} else {
			if id == "" || field.Clean(id) != id {
				t.Fatalf("DecodeCursor(%q) = %q, not a job id", c, id)
			}
			if again, err := DecodeCursor(EncodeCursor(id)); err != nil || again != id {
				t.Fatalf("the cursor of %q decodes to %q, %v", id, again, err)
			}
		}
		n, err := DecodeReplayCursor(c)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("DecodeReplayCursor(%q) = %v, not ErrInvalidCursor", c, err)
			}
			return
		}
		if again, err := DecodeReplayCursor(EncodeReplayCursor(n)); err != nil || again != n {
			t.Fatalf("the audit cursor of %d decodes to %d, %v", n, again, err)
		}
	})
}
