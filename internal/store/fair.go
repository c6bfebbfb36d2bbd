package store

import (
	"sort"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
)

// Fairness keys (InsertParams.FairnessKey) share a queue's claims between tenants. A store
// keeps, per queue, the keys that may have queued jobs, each with the time it was last served
// (a counter of the queue's fair claims): its table gains a key when a job of it becomes
// queued and loses it when a claim finds none left. A queue without such keys is claimed as
// before, first in, first out; a queue with them takes the fair claim:
//
//   - It reads the head jobs of at most FairKeysPerClaim(limit) keys, the least recently served
//     first, and of the jobs without a key (one more key, ""), at most limit of each, by claim
//     order (priority, then id), through the index of queued jobs by queue and key; and the head
//     of the whole queue, limit jobs, so that a higher-priority job of a key not read still
//     goes first. So a claim reads O(limit·(FairKeysPerClaim(limit)+2)) index entries, however
//     many jobs a key has queued or how many keys the queue has.
//   - FairPick chooses among them: priority first; within a priority, round robin between the
//     keys, the least recently served first, a key of weight W taking W turns a round.
//
// A key's weight (QueueSetKeyWeight; 1 when none is set) is read with its row, for the keys a
// claim reads only. Its row also counts the turns the key has used of its current round: a
// claim that leaves it turns keeps its place (it is served first again), one that uses the
// last of them moves it behind the others. So claims of one job serve a key of weight 3 three
// times for each time a key of weight 1.

// fairKeysSlack is how many keys more than it can serve a fair claim reads.
const fairKeysSlack = 16

// FairKeysPerClaim is how many keys a fair claim of limit jobs reads: every key it could serve
// with one job each, and some that turn out to have none claimable (their jobs wait for their
// group, or are gone).
func FairKeysPerClaim(limit int) int { return limit + fairKeysSlack }

// FairCandidate is a queued job a fair claim may take.
type FairCandidate struct {
	ID       string
	Priority int
	Key      string // "" for a job without a fairness key
	Kind     string
}

// MaxKeyWeight bounds a fairness key's weight.
const MaxKeyWeight = field.MaxKeyWeight

// FairKey is what a fair claim reads of a key's row: when it was last served (a counter of
// the queue's fair claims; 0 never), the turns it used of its current round, and its weight
// (0 is taken for 1).
type FairKey struct {
	Served int64
	Used   int
	Weight int
}

// weight is k's weight, at least 1.
func (k FairKey) weight() int { return max(k.Weight, 1) }

// used is the turns k used of its round, fewer than its weight (which may have been lowered
// since).
func (k FairKey) used() int { return min(max(k.Used, 0), k.weight()-1) }

// FairPick chooses up to limit of the candidates (duplicates are read once): the highest
// priority first; within a priority, round by round, the keys of a round in the order of
// served (least recently served first; a key not in keys has never been), then by name. A key
// of weight W has W jobs in a round (its first round fewer, by the turns it used of it):
// with weights 1, each key's first job, then each key's second, and so on. A kind in kindLeft
// takes no more than its free slots.
func FairPick(cands []FairCandidate, keys map[string]FairKey, limit int, kindLeft map[string]int) []FairCandidate {
	seen := make(map[string]bool, len(cands))
	uniq := make([]FairCandidate, 0, len(cands))
	for _, c := range cands {
		if !seen[c.ID] {
			seen[c.ID] = true
			uniq = append(uniq, c)
		}
	}
	sort.Slice(uniq, func(i, k int) bool {
		if uniq[i].Priority != uniq[k].Priority {
			return uniq[i].Priority > uniq[k].Priority
		}
		return uniq[i].ID < uniq[k].ID
	})
	// rank is a job's round: its place among its key's jobs of the same priority, after the
	// turns the key used, over the key's weight.
	type level struct {
		key      string
		priority int
	}
	rank := make([]int, len(uniq))
	next := map[level]int{}
	for i, c := range uniq {
		l := level{c.Key, c.Priority}
		k := keys[c.Key]
		rank[i] = (next[l] + k.used()) / k.weight()
		next[l]++
	}
	order := make([]int, len(uniq))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool {
		a, b := uniq[order[x]], uniq[order[y]]
		switch {
		case a.Priority != b.Priority:
			return a.Priority > b.Priority
		case rank[order[x]] != rank[order[y]]:
			return rank[order[x]] < rank[order[y]]
		case keys[a.Key].Served != keys[b.Key].Served:
			return keys[a.Key].Served < keys[b.Key].Served
		case a.Key != b.Key:
			return a.Key < b.Key
		}
		return a.ID < b.ID
	})
	left := make(map[string]int, len(kindLeft))
	for k, n := range kindLeft {
		left[k] = n
	}
	var out []FairCandidate
	for _, i := range order {
		if len(out) == limit {
			break
		}
		c := uniq[i]
		if n, capped := left[c.Kind]; capped {
			if n <= 0 {
				continue
			}
			left[c.Kind] = n - 1
		}
		out = append(out, c)
	}
	return out
}

// FairWrite is what a fair claim writes of a key's row.
type FairWrite struct {
	Key    string
	Served int64
	Used   int
}

// FairServed is what a fair claim writes of the keys it read (keys): the keys it served that
// used the last turn of their round, in the order it served them last, then the keys it read
// none of whose jobs it could take (idle: their jobs wait for their groups, say), each with a
// value of served after from (the queue's largest so far), so that they become the most
// recently served, the one whose last job came last the most, and the idle keys go behind
// them; a key served that has turns left of its round keeps its served. Each gets the turns it
// used of its round (the idle keys none). So keys that have jobs but none claimable do not
// hold the places of the next claim's reads: it reads the keys after them.
func FairServed(picked []FairCandidate, idle []string, keys map[string]FairKey, from int64) []FairWrite {
	last, took := map[string]int{}, map[string]int{}
	for i, c := range picked {
		last[c.Key] = i
		took[c.Key]++
	}
	names := make([]string, 0, len(last)+len(idle))
	for k := range last {
		names = append(names, k)
	}
	sort.Slice(names, func(i, k int) bool { return last[names[i]] < last[names[k]] })
	var out, stay []FairWrite
	for _, name := range names {
		k := keys[name]
		used := k.used() + took[name]
		if used < k.weight() {
			stay = append(stay, FairWrite{Key: name, Served: k.Served, Used: used})
			continue
		}
		from++
		out = append(out, FairWrite{Key: name, Served: from, Used: used % k.weight()})
	}
	for _, name := range idle {
		if _, served := last[name]; !served {
			from++
			out = append(out, FairWrite{Key: name, Served: from})
		}
	}
	return append(out, stay...)
}

// SortPicked puts the jobs a fair claim took in the order FairPick chose them (priority
// first, then round robin between keys), instead of by id: a process that claims ahead of
// its free slots starts them in that order, so that a quiet key's job claimed beside a
// flood's does not wait behind the flood's jobs of the same claim.
func SortPicked(jobs []*hoppertype.JobRow, picked []FairCandidate) {
	ids := make([]string, len(picked))
	for i, c := range picked {
		ids[i] = c.ID
	}
	SortByIDs(jobs, ids)
}

// SortByIDs puts jobs in the order of ids (a job not in ids goes last): a claim's UPDATE …
// RETURNING hands rows back in no particular order.
func SortByIDs(jobs []*hoppertype.JobRow, ids []string) {
	rank := make(map[string]int, len(ids))
	for i, id := range ids {
		rank[id] = i
	}
	sort.SliceStable(jobs, func(i, k int) bool {
		ri, ok := rank[jobs[i].ID]
		if !ok {
			ri = len(ids)
		}
		rk, ok := rank[jobs[k].ID]
		if !ok {
			rk = len(ids)
		}
		return ri < rk
	})
}
