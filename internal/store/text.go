package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CleanText makes free text (errors, stacks, reasons, progress messages) storable in any
// store: valid UTF-8 without NUL bytes, which PostgreSQL's text type refuses.
func CleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// ClipText is CleanText(s) cut to at most limit bytes, at a rune boundary, ending with "…"
// when it was cut: free text a program writes from what it cannot refuse (a handler's error,
// a release reason), made to fit a field's limit, so a report is never refused for its length.
// A limit under 4 bytes cuts without the mark.
func ClipText(s string, limit int) string {
	s = CleanText(s)
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	if limit < len(mark)+1 {
		return cutRunes(s, max(limit, 0))
	}
	return cutRunes(s, limit-len(mark)) + mark
}

// cutRunes returns the longest prefix of valid UTF-8 s that holds whole runes in at most n bytes.
func cutRunes(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
