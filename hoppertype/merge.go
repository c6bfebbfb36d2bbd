package hoppertype

// MergePolicy says what an enqueue with a merge key does to the job it merges into: a job of
// the same kind with the same merge key that no worker has been handed yet (contract 9).
type MergePolicy string

// The merge policies.
const (
	// MergeKeep leaves the waiting job as it is; the new enqueue adds nothing.
	MergeKeep MergePolicy = "keep"
	// MergeReplace gives the waiting job the new enqueue's args.
	MergeReplace MergePolicy = "replace"
	// MergeAppend adds the new enqueue's args to the waiting job's, which are a JSON array of
	// the args of every enqueue merged into it, oldest first.
	MergeAppend MergePolicy = "append"
)

// Valid reports whether p is one of the known policies.
func (p MergePolicy) Valid() bool {
	return p == MergeKeep || p == MergeReplace || p == MergeAppend
}
