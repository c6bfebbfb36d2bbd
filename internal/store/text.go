package store

import (
	"fmt"
	"unicode/utf8"
)

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
