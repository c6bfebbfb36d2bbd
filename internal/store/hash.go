package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// RepeatedKey finds two items of one batch that name the same idempotency key with different
// payloads, which no store can insert: it returns their indexes, or -1, -1 when there are none.
// Items that repeat a key with the same payload are one job.
func RepeatedKey(params []*InsertParams) (first, second int) {
	seen := map[string]int{}
	for i, p := range params {
		if p.IdempotencyKey == "" {
			continue
		}
		j, ok := seen[p.IdempotencyKey]
		if !ok {
			seen[p.IdempotencyKey] = i
			continue
		}
		if params[j].Kind != p.Kind || string(params[j].Args) != string(p.Args) {
			return j, i
		}
	}
	return -1, -1
}

// CheckBatch refuses, before anything is written, a batch no store can insert as given: two
// items with one idempotency key and different payloads (ErrDuplicate; nothing was written,
// so the error names the items, not a job), or a header that is not UTF-8, which its JSON
// encoding would silently change (ErrInvalid).
func CheckBatch(params []*InsertParams) error {
	if first, second := RepeatedKey(params); first >= 0 {
		return fmt.Errorf("idempotency key %q: items %d and %d of the batch have different payloads: %w",
			params[second].IdempotencyKey, first, second, ErrDuplicate)
	}
	for i, p := range params {
		if err := CheckHeaders(p.Headers); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}

// CheckHeaders refuses headers that are not UTF-8 (ErrInvalid): stored as JSON, they would
// come back changed.
func CheckHeaders(h map[string]string) error {
	for k, v := range h {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("header %q: %w: not valid UTF-8", k, ErrInvalid)
		}
	}
	return nil
}
