package claim

import (
	"slices"
	"sync"
)

// KindCaps bounds how many jobs of a kind one process runs at once (hopper.Config's
// KindConcurrency): its other slots run other kinds. A Driver asks it, before each claim,
// which kinds to claim and how many of each capped kind (Reserve): a capped kind's jobs are
// claimed in a claim of their own, limited to its room, and counted from then on, so that
// claims out at once never take together more than the room; a saturated kind is left out
// of the claim, and its jobs stay queued for other processes. Each job of a capped kind is
// counted until its Driver says it ended or went back (Free). A nil *KindCaps caps nothing.
// Safe for concurrent use.
type KindCaps struct {
	mu   sync.Mutex
	max  map[string]int
	held map[string]int // jobs counted: running, waiting for a slot, or reserved by a claim out
}

// NewKindCaps returns the caps of max (kind → most jobs at once); nil when max is empty.
func NewKindCaps(max map[string]int) *KindCaps {
	if len(max) == 0 {
		return nil
	}
	return &KindCaps{max: max, held: map[string]int{}}
}

// Capped reports whether kind has a cap.
func (k *KindCaps) Capped(kind string) bool {
	if k == nil {
		return false
	}
	_, ok := k.max[kind]
	return ok
}

// Reserve splits a claim of up to n jobs of kinds: room holds, for each capped kind of kinds
// with room, how many of its jobs the claim may take (at most n), reserved until the Driver
// returns what it did not take (Unreserve); others are the kinds without a cap, claimed as
// usual.
func (k *KindCaps) Reserve(kinds []string, n int) (room map[string]int, others []string) {
	if k == nil {
		return nil, kinds
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, kind := range kinds {
		limit, ok := k.max[kind]
		if !ok {
			others = append(others, kind)
			continue
		}
		if r := min(limit-k.held[kind], n); r > 0 {
			if room == nil {
				room = map[string]int{}
			}
			room[kind] = r
			k.held[kind] += r
		}
	}
	return room, others
}

// Take counts one job of kind that came from elsewhere (a job another stream could not push),
// if kind has room: false when kind is saturated. A kind without a cap always has room.
func (k *KindCaps) Take(kind string) bool {
	if !k.Capped(kind) {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held[kind] >= k.max[kind] {
		return false
	}
	k.held[kind]++
	return true
}

// Saturated reports whether kind is capped and has no room.
func (k *KindCaps) Saturated(kind string) bool {
	if !k.Capped(kind) {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held[kind] >= k.max[kind]
}

// Unreserve returns n reserved units of kind that a claim did not take.
func (k *KindCaps) Unreserve(kind string, n int) { k.Free(kind, n) }

// Free says that n counted jobs of kind ended or went back to their queue.
func (k *KindCaps) Free(kind string, n int) {
	if k == nil || n <= 0 || !k.Capped(kind) {
		return
	}
	k.mu.Lock()
	k.held[kind] = max(k.held[kind]-n, 0)
	k.mu.Unlock()
}

// Held is how many jobs of kind are counted now.
func (k *KindCaps) Held(kind string) int {
	if k == nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held[kind]
}

// Kinds returns the capped kinds, sorted.
func (k *KindCaps) Kinds() []string {
	if k == nil {
		return nil
	}
	out := make([]string, 0, len(k.max))
	for kind := range k.max {
		out = append(out, kind)
	}
	slices.Sort(out)
	return out
}

// Split is one of the claims Capped makes.
type Split struct {
	// Kinds to claim: a single capped kind, or the kinds without a cap.
	Kinds []string
	// Units and Ahead are as in Request: a capped kind's claim takes at most its room and
	// none ahead.
	Units, Ahead int
	// Capped: the claim of one capped kind (Kinds[0]), within its room.
	Capped bool
}

// Capped makes a claim of up to units jobs of kinds, and ahead more, in a process or a stream
// with kinds capped by caps: each capped kind with room in a claim of its own, limited to its
// room and without jobs ahead, then the kinds without a cap for the units left, with the jobs
// ahead; a saturated kind is not claimed. claim makes one of these claims and returns the jobs
// it took (a capped kind's: only jobs of that kind). The capped kinds' jobs stay counted
// until the Driver frees them (Free); the room a claim did not take is given back at once.
// After a failed claim no other is made; the jobs taken so far are returned with its error.
func Capped[J any](caps *KindCaps, kinds []string, units, ahead int, claim func(Split) ([]J, error)) ([]J, error) {
	room, others := caps.Reserve(kinds, units)
	var jobs []J
	var err error
	for _, kind := range caps.Kinds() {
		n := room[kind]
		if n == 0 {
			continue
		}
		if err != nil || units-len(jobs) <= 0 {
			caps.Unreserve(kind, n)
			continue
		}
		var got []J
		got, err = claim(Split{Kinds: []string{kind}, Units: min(n, units-len(jobs)), Capped: true})
		caps.Unreserve(kind, n-len(got))
		jobs = append(jobs, got...)
	}
	if left := units - len(jobs); err == nil && len(others) > 0 && left > 0 {
		var got []J
		got, err = claim(Split{Kinds: others, Units: left, Ahead: ahead})
		jobs = append(jobs, got...)
	}
	return jobs, err
}
