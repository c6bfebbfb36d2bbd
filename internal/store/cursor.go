package store

import (
	"encoding/base64"
	"fmt"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"sort"
	"strings"
)

// cursorPrefix marks the list cursors stores issue, so that any other text that happens to be
// valid base64 is refused instead of being read as a job id.
const cursorPrefix = "hopper-list-v1:"

// EncodeCursor is the opaque list cursor that continues after job id.
func EncodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

// DecodeCursor returns the job id a cursor continues after, or an error wrapping
// ErrInvalidCursor for text no store issued.
func DecodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	id, ok := strings.CutPrefix(string(b), cursorPrefix)
	// A store issues cursors for job ids, which are text: anything else was made up.
	if err != nil || !ok || id == "" || field.Clean(id) != id {
		return "", fmt.Errorf("list jobs: cursor %q is not one this store issued: %w", c, ErrInvalidCursor)
	}
	return id, nil
}

// SortClaimed puts claimed jobs in claim order: priority (highest first), then id (oldest
// first). Stores call it because RETURNING gives rows in no particular order.
func SortClaimed(jobs []*hoppertype.JobRow) {
	sort.Slice(jobs, func(i, k int) bool {
		if jobs[i].Priority != jobs[k].Priority {
			return jobs[i].Priority > jobs[k].Priority
		}
		return jobs[i].ID < jobs[k].ID
	})
}
