package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Merging (contract 9). An item with a merge key merges into the job of its kind with that
// key that no worker has been handed yet: queued or scheduled, and never claimed (token 0).
// A job claimed once never takes a merge again, even back in its queue after a retry, a
// rescue or a release: a worker may have acted on its args, so the next enqueue makes a new
// job and no change is lost. There is therefore at most one job a key can merge into, which
// each store keeps so under concurrent enqueues (SQLite: one writer; PostgreSQL: a lock on
// the key, see its merge.go). Items of one batch merge in their order, into jobs the batch
// made too. Each merge bumps the job's version and records an event (same state before and
// after) with the item's actor and MergeReason.

// Errors of a merge a store refuses; they come wrapped in a *MergeError.
var (
	// ErrMergeConflict: the item would change the args of a job of the other shape: append
	// into a job that was not enqueued with append (its args are not a list), or replace
	// into one that was (its handler reads a list).
	ErrMergeConflict = errors.New("merge policy conflicts with the waiting job's")
	// ErrArgsTooLarge: the args the merge makes exceed the item's MaxArgsBytes.
	ErrArgsTooLarge = errors.New("merged args too large")
)

// MergeError refuses item Item of a batch: merging it into job JobID breaks the rule Err
// names (ErrMergeConflict, ErrArgsTooLarge); Detail says how. Nothing of the batch is stored.
type MergeError struct {
	Item   int
	JobID  string
	Err    error
	Detail string
}

func (e *MergeError) Error() string {
	return fmt.Sprintf("item %d: merge into job %s: %v: %s", e.Item, e.JobID, e.Err, e.Detail)
}

func (e *MergeError) Unwrap() error { return e.Err }

// MergeTarget is what a merge reads of the job it merges into.
type MergeTarget struct {
	ID   string
	Args []byte
	// Policy is the merge policy of the enqueue that made the job.
	Policy hoppertype.MergePolicy
}

// MergedArgs returns the args job t has once item (batch index i) merges into it, or nil when
// they stay as they are (MergeKeep). Append joins the two JSON arrays.
func MergedArgs(t *MergeTarget, i int, item *InsertParams) ([]byte, error) {
	refuse := func(err error, format string, args ...any) error {
		return &MergeError{Item: i, JobID: t.ID, Err: err, Detail: fmt.Sprintf(format, args...)}
	}
	var args []byte
	switch item.Merge {
	case hoppertype.MergeReplace:
		if t.Policy == hoppertype.MergeAppend {
			return nil, refuse(ErrMergeConflict, "it was enqueued with merge policy append and holds a list; replace would change its shape")
		}
		args = item.Args
	case hoppertype.MergeAppend:
		if t.Policy != hoppertype.MergeAppend {
			return nil, refuse(ErrMergeConflict, "it was enqueued with merge policy %s, not append: its args are not a list", policyName(t.Policy))
		}
		joined, ok := joinArrays(t.Args, item.Args)
		if !ok {
			return nil, refuse(ErrMergeConflict, "its args or the item's are not a JSON array")
		}
		args = joined
	default:
		return nil, nil
	}
	if item.MaxArgsBytes > 0 && len(args) > item.MaxArgsBytes {
		return nil, refuse(ErrArgsTooLarge, "its args would be %d bytes, more than the limit of %d", len(args), item.MaxArgsBytes)
	}
	return args, nil
}

func policyName(p hoppertype.MergePolicy) string {
	if p == "" {
		return string(hoppertype.MergeKeep)
	}
	return string(p)
}

// joinArrays returns the JSON array of a's items followed by b's; ok is false when either is
// not an array.
func joinArrays(a, b []byte) (joined []byte, ok bool) {
	ai, aok := arrayItems(a)
	bi, bok := arrayItems(b)
	switch {
	case !aok || !bok:
		return nil, false
	case len(ai) == 0:
		return b, true
	case len(bi) == 0:
		return a, true
	}
	out := make([]byte, 0, len(ai)+len(bi)+3)
	out = append(append(append(append(append(out, '['), ai...), ','), bi...), ']')
	return out, true
}

// arrayItems returns what lies between the brackets of a JSON array, trimmed.
func arrayItems(b []byte) ([]byte, bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	return bytes.TrimSpace(b[1 : len(b)-1]), true
}

// MergeReason is the reason a job's history gives for a merge into it.
func MergeReason(p hoppertype.MergePolicy) string {
	return "merged (" + policyName(p) + ")"
}
