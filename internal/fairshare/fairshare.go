// Package fairshare divides a pool of units between queues by weight (contract 14): a
// process's worker slots (the engine), a remote worker's stream credit and the jobs of one
// poll (the server, through its worker API, internal/workerapi). It is arithmetic only: callers keep the
// state (what each queue holds, whether it wants more) and their own locks.
package fairshare

import (
	"cmp"
	"slices"
)

// Queue is one queue's part of a pool.
type Queue struct {
	Name    string
	Weight  int  // its weight (at least 1)
	Max     int  // the most it may hold (the engine's per-queue concurrency)
	Held    int  // units it holds
	Wanting bool // it has work waiting for units
	// Served counts the units granted to it over time (the engine's slots): Shares gives the
	// units left over after the whole parts to the queues served least for their weight first,
	// so that over time even a pool too small for every queue's share (one slot, three queues)
	// follows the weights instead of always favouring the same queue.
	Served int64
}

// Shares apportions total units between qs by weight: each gets the whole part of
// total × weight ÷ the weights' sum, and the units left over go one each to the queues with a
// remainder that were served least for their weight (Served ÷ Weight), then to the largest
// remainders (ties to the heavier queue, then by name), so the shares add up to total.
func Shares(total int, qs []*Queue) map[*Queue]int {
	out, sum, left := wholeParts(total, qs)
	byRemainder := slices.Clone(qs)
	slices.SortFunc(byRemainder, func(a, b *Queue) int {
		ra, rb := total*a.Weight%sum, total*b.Weight%sum
		return cmp.Or(cmp.Compare(boolRank(ra == 0), boolRank(rb == 0)),
			cmp.Compare(a.Served*int64(b.Weight), b.Served*int64(a.Weight)),
			cmp.Compare(rb, ra), cmp.Compare(b.Weight, a.Weight), cmp.Compare(a.Name, b.Name))
	})
	for _, q := range byRemainder[:left] {
		out[q]++
	}
	return out
}

// level is the units free and qs's holdings add up to, and the sum of qs's weights.
func level(free int, qs []*Queue) (pool, sum int) {
	pool = free
	for _, q := range qs {
		pool += q.Held
		sum += q.Weight
	}
	return pool, sum
}

// wholeParts gives each of qs the whole part of its share of total, and returns the sum of
// the weights and the units left over (fewer than len(qs)).
func wholeParts(total int, qs []*Queue) (out map[*Queue]int, sum, left int) {
	for _, q := range qs {
		sum += q.Weight
	}
	out = make(map[*Queue]int, len(qs))
	left = total
	for _, q := range qs {
		out[q] = total * q.Weight / sum
		left -= out[q]
	}
	return out, sum, left
}

// Split divides free units between qs, queues that all want units, by weight, counting what
// each already holds: it brings the queues, as far as whole units allow, to holdings in
// proportion to their weights (their shares of free plus what they hold), and a queue that
// already holds more than that gets none, its part going to the others (a weighted max-min
// share, work conserving: every free unit is given). Queues with no held units split free by
// weight alone.
//
// The unit a queue's share has over its whole part goes to it with the probability of that
// fraction: the fractions are laid end to end (by name) and a unit falls at u, u+1, u+2…
// (systematic sampling, 0 ≤ u < 1). A caller that draws u at random for each split gives
// each queue exactly its weighted share on average, so that even splits of one unit at a
// time, with no memory of the ones before, follow the weights. Split returns each queue's
// units (0 for queues that get none).
func Split(free int, qs []*Queue, u float64) map[*Queue]int {
	out := make(map[*Queue]int, len(qs))
	if free <= 0 || len(qs) == 0 {
		return out
	}
	// The queues at or below the level that free fills, found by dropping those above the
	// level of the others until none is: at least one always stays, since free > 0.
	in := slices.Clone(qs)
	for {
		pool, sum := level(free, in)
		kept := make([]*Queue, 0, len(in))
		for _, q := range in {
			if q.Held*sum <= pool*q.Weight {
				kept = append(kept, q)
			}
		}
		if len(kept) == len(in) {
			break
		}
		in = kept
	}
	pool, _ := level(free, in)
	shares, sum, left := wholeParts(pool, in)
	slices.SortFunc(in, func(a, b *Queue) int { return cmp.Compare(a.Name, b.Name) })
	// Systematic sampling over the remainders (each below sum), in units of 1/sum: the k-th
	// extra unit falls at offset + k×sum.
	at := min(int(u*float64(sum)), sum-1)
	end := 0
	for _, q := range in {
		end += pool * q.Weight % sum
		if left > 0 && at < end {
			shares[q]++
			at += sum
			left--
		}
		out[q] = shares[q] - q.Held
	}
	return out
}

// boolRank orders false before true.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
