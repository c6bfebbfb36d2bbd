package store

import (
	"sort"
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
//     keys, the least recently served first.

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

// FairPick chooses up to limit of the candidates (duplicates are read once): the highest
// priority first; within a priority, each key's first job, then each key's second, and so
// on, the keys in the order of served (least recently served first; a key not in served has
// never been), then by name. A kind in kindLeft takes no more than its free slots.
func FairPick(cands []FairCandidate, served map[string]int64, limit int, kindLeft map[string]int) []FairCandidate {
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
	// rank is a job's place among its key's jobs of the same priority.
	type level struct {
		key      string
		priority int
	}
	rank := make([]int, len(uniq))
	next := map[level]int{}
	for i, c := range uniq {
		l := level{c.Key, c.Priority}
		rank[i] = next[l]
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
		case served[a.Key] != served[b.Key]:
			return served[a.Key] < served[b.Key]
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

// FairServed is the keys a fair claim served, in the order it served them last, then the keys
// it read none of whose jobs it could take (idle: their jobs wait for their groups, say), each
// with the value of served it gets: after from (the queue's largest so far), so that the keys
// it served become the most recently served, the one whose last job came last the most, and
// the idle keys go behind them. So keys that have jobs but none claimable do not hold the
// places of the next claim's reads: it reads the keys after them.
func FairServed(picked []FairCandidate, idle []string, from int64) ([]string, []int64) {
	last := map[string]int{}
	for i, c := range picked {
		last[c.Key] = i
	}
	keys := make([]string, 0, len(last)+len(idle))
	for k := range last {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, k int) bool { return last[keys[i]] < last[keys[k]] })
	for _, k := range idle {
		if _, served := last[k]; !served {
			keys = append(keys, k)
		}
	}
	values := make([]int64, len(keys))
	for i := range keys {
		values[i] = from + int64(i) + 1
	}
	return keys, values
}
