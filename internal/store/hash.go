package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// PayloadHash identifies a job's payload for idempotency: the same kind and the same args bytes.
func PayloadHash(kind string, args []byte) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(args)
	return hex.EncodeToString(h.Sum(nil))
}

// ClampPercent bounds progress to 0–100.
func ClampPercent(p int) int {
	return min(max(p, 0), 100)
}

// CleanText makes free text (errors, stacks, reasons, progress messages) storable in any
// store: valid UTF-8 without NUL bytes, which PostgreSQL's text type refuses.
func CleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
