package hopper

import (
	"encoding/json"
	"errors"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// MergePolicy says what an enqueue with InsertOpts.MergeKey does to the job it merges into:
// keep it, replace its args, or append to them (contract 9; docs/flow-control.md).
type MergePolicy = hoppertype.MergePolicy

// The merge policies.
const (
	// MergeKeep (the default) leaves the waiting job as it is: the new enqueue adds nothing.
	MergeKeep = hoppertype.MergeKeep
	// MergeReplace gives the waiting job the new enqueue's args.
	MergeReplace = hoppertype.MergeReplace
	// MergeAppend keeps every enqueue's args: a job enqueued with it stores its args as a JSON
	// array of one item, and each enqueue merged into it adds its args to the end. Its worker
	// takes Merged[T].
	MergeAppend = hoppertype.MergeAppend
)

// Merged is the args of a job enqueued with MergeAppend: the args of every enqueue merged
// into it, oldest first. Enqueue T with MergeAppend and register the kind's worker for
// Merged[T], which has T's kind:
//
//	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[hopper.Merged[Reindex]]) error {
//		for _, r := range job.Args { // every Reindex enqueued while the job waited
//			…
//		}
//		return nil
//	})
//
// Enqueueing a Merged[T] with MergeAppend adds its items as they are, as if each had been
// enqueued on its own, in order; with another policy, or without a merge key, it is a job
// whose args are that list.
type Merged[T JobArgs] []T

// Kind returns T's kind.
func (Merged[T]) Kind() string {
	var zero T
	return zero.Kind()
}

func (Merged[T]) mergedList() {}

// mergedList is Merged[T] of any T.
type mergedList interface{ mergedList() }

// appendList is what a job enqueued with MergeAppend stores of b, the JSON of args: the list
// of one item, or a Merged[T]'s own list.
func appendList(args JobArgs, b json.RawMessage) json.RawMessage {
	if _, ok := args.(mergedList); ok {
		if string(b) == "null" { // a nil Merged[T]
			return json.RawMessage("[]")
		}
		return b
	}
	out := make([]byte, 0, len(b)+2)
	return append(append(append(out, '['), b...), ']')
}

// checkMerge checks a merge key and its policy; an empty policy was defaulted to MergeKeep
// when the key is set.
func checkMerge(key string, policy MergePolicy) error {
	if err := checkLimited("merge_key", key, maxKeyLen); err != nil {
		return err
	}
	switch {
	case policy != "" && !policy.Valid():
		return invalid("merge", "%q is not one of keep, replace, append", policy)
	case policy != "" && key == "":
		return invalid("merge", "policy %s needs a merge_key", policy)
	}
	return nil
}

// mergeRefused turns a store's refusal of a merge into a *ValidationError naming the field:
// args when the merged args would exceed Config.MaxArgsBytes, merge when the policy does not
// fit the waiting job's. n is the size of the batch.
func mergeRefused(err error, n int) error {
	var me *store.MergeError
	if !errors.As(err, &me) {
		return err
	}
	field := "merge"
	if errors.Is(me.Err, store.ErrArgsTooLarge) {
		field = "args"
	}
	verr := invalid(field, "merging into job %s: %s", me.JobID, me.Detail)
	if n > 1 {
		return inBatch(me.Item, verr)
	}
	return verr
}
