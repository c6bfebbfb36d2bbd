package store

import (
	"sort"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Limits per key: a queue or a kind may cap the running jobs of each fairness key
// (InsertParams.FairnessKey) and rate-limit each key's starts, fleet-wide. They bind keyed jobs
// only: a job without a key is bound by the queue's and the kind's own caps and rate limits
// alone. Keyed jobs are taken by the fair claim only (fair.go), so only it applies them, as a
// step of its own between its reads and FairPick:
//
//   - The store reads the limits per key that apply to the claim (the queue's, and those of
//     the kinds it may take) with the other caps, under the same locks on PostgreSQL.
//   - For the keys of the candidates it read (at most FairKeysPerClaim(limit) keys plus those
//     of the queue's head, limit jobs), it counts their running jobs (the index of running
//     keyed jobs: as many entries as those keys have running jobs) and reads their buckets
//     (a key without a stored bucket has a full one).
//   - KeyLeft.Bound leaves each key no more candidates than its free slots and starts allow,
//     in claim order; FairPick chooses among the rest. A key left none is idle for
//     FairServed: it goes behind the keys served, and does not hold the next claim's reads.
//   - The buckets of the keys that started jobs are written back; buckets read full again
//     are deleted, and so are up to KeyBucketSweep(limit) rows older than one period (full
//     again) of each per-key rate limit, so the rows do not outgrow the keys that started
//     jobs within a period.
//
// So a claim costs O(FairKeysPerClaim(limit) + limit) keys' running jobs and buckets beyond
// the fair claim's own reads, however many keys the queue has.

// KeyLimit is the limits per key of a queue or a kind: at most Cap running jobs (0: no cap)
// and Rate starts (zero: none) per fairness key.
type KeyLimit struct {
	Scope LimitScope
	Name  string
	Cap   int
	Rate  Rate
}

// KeyRunning is how many jobs of a fairness key, queue and kind run.
type KeyRunning struct {
	Key, Queue, Kind string
	Running          int
}

// KeyBucket is a stored bucket of a per-key rate limit: Tokens starts at At.
type KeyBucket struct {
	Scope  LimitScope
	Name   string
	Key    string
	Tokens float64
	At     time.Time
}

// KeyBucketSweep is how many stale bucket rows of one per-key rate limit a claim of limit jobs
// deletes: at least as many as it may add.
func KeyBucketSweep(limit int) int { return limit + fairKeysSlack }

// KeyLimit adds a limit per key that applies to the claim.
func (c *CapsLeft) KeyLimit(l KeyLimit) {
	if l.Cap > 0 || !l.Rate.IsZero() {
		c.KeyLimits = append(c.KeyLimits, l)
	}
}

// KeysOf returns the distinct fairness keys of cands, by name, without "".
func KeysOf(cands []FairCandidate) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		if c.Key != "" && !seen[c.Key] {
			seen[c.Key] = true
			out = append(out, c.Key)
		}
	}
	sort.Strings(out)
	return out
}

// keyRef names one key's bucket or slots under one limit.
type keyRef struct {
	scope     LimitScope
	name, key string
}

// KeyLeft is what the limits per key leave one fair claim, key by key.
type KeyLeft struct {
	queue   string
	now     time.Time
	limits  []KeyLimit
	running map[keyRef]int
	stored  map[keyRef]KeyBucket
	capLeft map[keyRef]int     // free slots, for the refs under a cap
	buckets map[keyRef]*Bucket // refilled to now, for the refs under a rate
	read    map[keyRef]bool    // refs whose stored bucket was read
	charged map[keyRef]bool
	capHeld bool
	rated   map[keyRef]bool // refs whose rate left a candidate out
}

// NewKeyLeft is what limits leave a fair claim of queue at now, given the running jobs and
// the stored buckets of the keys it read.
func NewKeyLeft(queue string, limits []KeyLimit, running []KeyRunning, stored []KeyBucket, now time.Time) *KeyLeft {
	k := &KeyLeft{queue: queue, now: now, limits: limits, running: map[keyRef]int{}, stored: map[keyRef]KeyBucket{},
		capLeft: map[keyRef]int{}, buckets: map[keyRef]*Bucket{}, read: map[keyRef]bool{}, charged: map[keyRef]bool{},
		rated: map[keyRef]bool{}}
	for _, r := range running {
		for _, l := range limits {
			if l.Cap > 0 && l.matches(r.Queue, r.Kind) {
				k.running[keyRef{scope: l.Scope, name: l.Name, key: r.Key}] += r.Running
			}
		}
	}
	for _, b := range stored {
		k.stored[keyRef{scope: b.Scope, name: b.Name, key: b.Key}] = b
	}
	return k
}

// matches reports whether the limit applies to a job of queue and kind.
func (l KeyLimit) matches(queue, kind string) bool {
	if l.Scope == LimitQueue {
		return l.Name == queue
	}
	return l.Name == kind
}

// refs returns the refs of a job of kind with key under each limit that applies to it,
// setting up their slots and buckets on first use.
func (k *KeyLeft) refs(kind, key string) []keyRef {
	var out []keyRef
	for _, l := range k.limits {
		if !l.matches(k.queue, kind) {
			continue
		}
		ref := keyRef{scope: l.Scope, name: l.Name, key: key}
		if l.Cap > 0 {
			if _, ok := k.capLeft[ref]; !ok {
				k.capLeft[ref] = max(l.Cap-k.running[ref], 0)
			}
		}
		if !l.Rate.IsZero() {
			if _, ok := k.buckets[ref]; !ok {
				b := Bucket{Rate: l.Rate, Tokens: float64(l.Rate.Limit), At: k.now}
				if s, ok := k.stored[ref]; ok {
					b = Bucket{Rate: l.Rate, Tokens: min(s.Tokens, float64(l.Rate.Limit)), At: s.At}.Refill(k.now)
					k.read[ref] = true
				}
				k.buckets[ref] = &b
			}
		}
		out = append(out, ref)
	}
	return out
}

// Bound returns the candidates (read once each) the limits per key let the claim take, in
// claim order: each key's first ones, as many as its free slots and starts under every limit
// that applies to them. Unkeyed candidates all pass.
func (k *KeyLeft) Bound(cands []FairCandidate) []FairCandidate {
	seen := make(map[string]bool, len(cands))
	out := make([]FairCandidate, 0, len(cands))
	for _, c := range cands {
		if !seen[c.ID] {
			seen[c.ID] = true
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].ID < out[j].ID
	})
	taken := map[keyRef]int{}
	kept := out[:0]
	for _, c := range out {
		if c.Key == "" {
			kept = append(kept, c)
			continue
		}
		refs, ok := k.refs(c.Kind, c.Key), true
		for _, ref := range refs {
			if left, capped := k.capLeft[ref]; capped && taken[ref] >= left {
				ok, k.capHeld = false, true
			}
			if b := k.buckets[ref]; b != nil && taken[ref] >= b.Free() {
				ok, k.rated[ref] = false, true
			}
		}
		if ok {
			for _, ref := range refs {
				taken[ref]++
			}
			kept = append(kept, c)
		}
	}
	return kept
}

// Spend charges the jobs the claim took to their keys' buckets.
func (k *KeyLeft) Spend(jobs []*hoppertype.JobRow) {
	for _, j := range jobs {
		if j.FairnessKey == "" {
			continue
		}
		for _, ref := range k.refs(j.Kind, j.FairnessKey) {
			if b := k.buckets[ref]; b != nil {
				*b, k.charged[ref] = b.Take(1), true
			}
		}
	}
}

// Hold adds to h what the limits per key held back, for a claim that asked for asked jobs and
// took got: Capped when they left candidates out and the claim came back short, and Wait, the
// soonest next start of a key whose rate left a candidate out (unless the queue's own limit
// already sets it).
func (k *KeyLeft) Hold(h *Hold, asked, got int) {
	if got >= asked || (!k.capHeld && len(k.rated) == 0) {
		return
	}
	h.Capped = true
	if h.QueueWide {
		return
	}
	for ref := range k.rated {
		if next := k.buckets[ref].Next(); h.Wait == 0 || next < h.Wait {
			h.Wait = next
		}
	}
}

// Writes returns the buckets to store (those the claim took starts from) and the stored ones
// to delete (read, not charged, and full again).
func (k *KeyLeft) Writes() (put []KeyBucket, drop []KeyBucket) {
	for ref, b := range k.buckets {
		kb := KeyBucket{Scope: ref.scope, Name: ref.name, Key: ref.key, Tokens: b.Tokens, At: b.At}
		switch {
		case k.charged[ref]:
			put = append(put, kb)
		case k.read[ref] && b.Free() >= b.Rate.Limit:
			drop = append(drop, kb)
		}
	}
	less := func(s []KeyBucket) func(i, j int) bool {
		return func(i, j int) bool {
			if s[i].Scope != s[j].Scope {
				return s[i].Scope < s[j].Scope
			}
			if s[i].Name != s[j].Name {
				return s[i].Name < s[j].Name
			}
			return s[i].Key < s[j].Key
		}
	}
	sort.Slice(put, less(put))
	sort.Slice(drop, less(drop))
	return put, drop
}

// RateLimits returns the limits per key with a rate: those whose stale buckets a claim sweeps.
func (k *KeyLeft) RateLimits() []KeyLimit {
	var out []KeyLimit
	for _, l := range k.limits {
		if !l.Rate.IsZero() {
			out = append(out, l)
		}
	}
	return out
}

// BatchPrefix is how many of a batch's jobs (cands, in the batch's order) the limits per key
// let a batch claim take: the batch ends before its first job whose key has no slot or start
// left, so that it stays a run of consecutive jobs.
func (k *KeyLeft) BatchPrefix(cands []FairCandidate) int {
	kept := make(map[string]bool, len(cands))
	for _, c := range k.Bound(cands) {
		kept[c.ID] = true
	}
	for i, c := range cands {
		if !kept[c.ID] {
			return i
		}
	}
	return len(cands)
}

// BatchCandidates are the jobs of a batch, in its order, as the limits per key see them:
// keyOf holds each job's fairness key ("" for none).
func BatchCandidates(best *BatchCandidate, kind string, keyOf map[string]string) []FairCandidate {
	out := make([]FairCandidate, len(best.IDs))
	for i, id := range best.IDs {
		out[i] = FairCandidate{ID: id, Priority: best.Priority, Key: keyOf[id], Kind: kind}
	}
	return out
}
