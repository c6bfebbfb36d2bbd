package apikey

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds Parse any presented key. It must never panic, every refusal wraps
// ErrMalformed and never quotes the secret, and what it accepts has the documented shape and
// rebuilds the input.
func FuzzParse(f *testing.F) {
	id := strings.Repeat("a", idLen)
	secret := strings.Repeat("2", secretLen)
	for _, seed := range []string{
		Prefix + id + "_" + secret, Prefix + id + "_" + secret + "x", Prefix + id, Prefix, "", "hop_x",
		"Bearer " + Prefix + id + "_" + secret, Prefix + strings.ToUpper(id) + "_" + secret,
		Prefix + id + "_" + strings.Repeat("\xff", secretLen), Prefix + "\x00" + id[1:] + "_" + secret,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		gotID, gotSecret, err := Parse(key)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) error does not wrap ErrMalformed: %v", key, err)
			}
			// The id may be quoted (it is not secret); the secret never is.
			id, s, ok := strings.Cut(strings.TrimPrefix(key, Prefix), "_")
			if ok && len(s) >= 8 && strings.Contains(strings.ReplaceAll(err.Error(), id, ""), s) {
				t.Fatalf("Parse(%q) error quotes the secret: %v", key, err)
			}
			return
		}
		if len(gotID) != idLen || len(gotSecret) != secretLen || !inAlphabet(gotID) || !inAlphabet(gotSecret) {
			t.Fatalf("Parse(%q) accepted id %q secret %q of the wrong shape", key, gotID, gotSecret)
		}
		if Prefix+gotID+"_"+gotSecret != key {
			t.Fatalf("Parse(%q) = %q, %q: does not rebuild the key", key, gotID, gotSecret)
		}
	})
}
