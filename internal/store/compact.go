package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Compaction (issue 32; docs/flow-control.md#compaction). A group is the jobs of one kind with
// one group key (jobs without a group key belong to none). Compacting a group replaces its
// waiting jobs, those queued and never claimed (token 0), by one new queued job, in one
// transaction (with other groups: a batch of CompactBatches): the new job copies the oldest replaced job (queue, priority, headers, attempts,
// timeout, retry policy, group key, result TTL) and takes args by the policy, and has no merge
// key; each replaced job ends canceled with the reason CompactedReason(new id), and the
// lineage table names the new job for each. A job claimed before the compaction takes its
// lock (running, or queued again after a retry or a rescue) is never replaced, and a group
// with fewer waiting jobs than two, or than Over+1, is left alone.

// CompactParams compacts the groups of one kind.
type CompactParams struct {
	Kind string
	// GroupKey limits the compaction to that group; empty takes every group of the kind.
	GroupKey string
	// Over: a group is compacted only when more than Over of its jobs wait (and never one of
	// a single job). 0 or 1 compacts every group of two or more.
	Over int
	// Policy gives the new job's args: keep (the oldest's), replace (the newest's) or append
	// (the items of every job's list, oldest first; every job of the group must hold a list:
	// enqueued with merge policy append).
	Policy hoppertype.MergePolicy
	// NewID returns the id of a group's new job; it must sort after every existing job's.
	NewID func() string
	Actor hoppertype.Actor
	// Retention is how long a replaced job is kept, unless it has its own result TTL.
	Retention time.Duration
	// MaxArgsBytes, when positive, bounds the args of an append.
	MaxArgsBytes int
}

// CompactResult says what a compaction did, group by group, in group key order.
type CompactResult struct {
	Groups []*CompactedGroup
}

// CompactedGroup is one group a compaction found over its threshold.
type CompactedGroup struct {
	GroupKey string
	// NewJobID is the job that replaced Replaced; empty when Refused.
	NewJobID string
	// Replaced are the ids of the jobs it replaced, oldest first.
	Replaced []string
	// Refused says why the group was left as it was (its args do not fit the policy or the
	// size limit): a *MergeError whose JobID is the job in the way.
	Refused error
}

// Compacted counts the groups compacted and the jobs they replaced.
func (r *CompactResult) Compacted() (groups, jobs int) {
	for _, g := range r.Groups {
		if g.Refused == nil {
			groups++
			jobs += len(g.Replaced)
		}
	}
	return groups, jobs
}

// CompactCandidate is what a compaction reads of a waiting job.
type CompactCandidate struct {
	ID       string
	GroupKey string
	Args     []byte
	// Policy is the merge policy of the enqueue that made the job.
	Policy hoppertype.MergePolicy
}

// CompactedReason is the reason a replaced job's history gives.
func CompactedReason(newID string) string { return "compacted into " + newID }

// CompactReason is the reason the new job's history gives.
func CompactReason(p hoppertype.MergePolicy, n int) string {
	return fmt.Sprintf("compacted %d jobs (%s)", n, policyName(p))
}

// CompactArgs returns the args and the merge policy of the job that replaces group (oldest
// first, at least two jobs) under policy, or a *MergeError when they do not fit it.
func CompactArgs(policy hoppertype.MergePolicy, group []*CompactCandidate, maxArgsBytes int) ([]byte, hoppertype.MergePolicy, error) {
	refuse := func(id string, err error, format string, args ...any) error {
		return &MergeError{JobID: id, Err: err, Detail: fmt.Sprintf(format, args...)}
	}
	switch policy {
	case hoppertype.MergeReplace:
		last := group[len(group)-1]
		return last.Args, last.Policy, nil
	case hoppertype.MergeAppend:
		args := []byte{'['} // joined once: joining pairwise would copy the list once per job
		for _, j := range group {
			if j.Policy != hoppertype.MergeAppend {
				return nil, "", refuse(j.ID, ErrMergeConflict, "it was enqueued with merge policy %s, not append: its args are not a list", policyName(j.Policy))
			}
			items, ok := arrayItems(j.Args)
			if !ok {
				return nil, "", refuse(j.ID, ErrMergeConflict, "its args are not a JSON array")
			}
			if len(items) == 0 {
				continue
			}
			if len(args) > 1 {
				args = append(args, ',')
			}
			args = append(args, items...)
			if maxArgsBytes > 0 && len(args)+1 > maxArgsBytes {
				return nil, "", refuse(j.ID, ErrArgsTooLarge, "the args would be more than the limit of %d bytes", maxArgsBytes)
			}
		}
		args = append(args, ']')
		return args, hoppertype.MergeAppend, nil
	default:
		return group[0].Args, group[0].Policy, nil
	}
}

// CompactGroups splits candidates (in group key, then id order) into the groups a
// compaction with p replaces: those with more than max(p.Over, 1) jobs.
func CompactGroups(p *CompactParams, candidates []*CompactCandidate) [][]*CompactCandidate {
	over := max(p.Over, 1)
	var out [][]*CompactCandidate
	for i := 0; i < len(candidates); {
		j := i
		for j < len(candidates) && candidates[j].GroupKey == candidates[i].GroupKey {
			j++
		}
		if j-i > over {
			out = append(out, candidates[i:j])
		}
		i = j
	}
	return out
}

// CompactBatchJobs bounds the jobs a store replaces in one transaction, so that a large
// compaction does not hold SQLite's one writer, or PostgreSQL's row locks, for its whole run:
// a batch is whole groups, at least one, as many as fit.
const CompactBatchJobs = 500

// CompactBatches splits groups (CompactGroups's) into batches of whole groups of at most
// CompactBatchJobs jobs each (a larger group is a batch alone).
func CompactBatches(groups [][]*CompactCandidate) [][][]*CompactCandidate {
	var out [][][]*CompactCandidate
	n := 0
	for _, g := range groups {
		if len(out) == 0 || n+len(g) > CompactBatchJobs {
			out = append(out, nil)
			n = 0
		}
		out[len(out)-1] = append(out[len(out)-1], g)
		n += len(g)
	}
	return out
}

// CompactStore compacts the waiting jobs of a kind's groups.
type CompactStore interface {
	// JobCompact replaces the waiting jobs of each group of p.Kind with more than p.Over of
	// them by one new job (see the package comment above), each group in one transaction, the
	// groups in batches (CompactBatches) of one transaction each. A group whose args do not
	// fit p.Policy is left as it was and reported Refused.
	JobCompact(ctx context.Context, p *CompactParams) (*CompactResult, error)
	// JobCompactedFrom returns the ids of the jobs that job id replaced, oldest first (none
	// when it replaced none, or no job has that id).
	JobCompactedFrom(ctx context.Context, id string) ([]string, error)
	// JobCompactedInto returns the id of the job that replaced job id, "" when none did.
	JobCompactedInto(ctx context.Context, id string) (string, error)
}
