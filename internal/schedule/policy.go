package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidPolicy is wrapped by ParseCatchUp and ParseOverlap for a name they don't know.
var ErrInvalidPolicy = errors.New("invalid schedule policy")

// MaxCatchUp bounds the fire times one Due call returns.
const MaxCatchUp = 1000

// DefaultGrace is the grace window Due uses when given none: a fire time at most this old is
// on time, not missed.
const DefaultGrace = time.Minute

// CatchUp says what Due does with fire times that passed while no leader fired the schedule
// (downtime, a paused schedule, a leader failover). The zero value means CatchUpSkip.
type CatchUp string

const (
	// CatchUpSkip runs no missed fire time; the schedule resumes with its next one.
	CatchUpSkip CatchUp = "skip"
	// CatchUpLast runs the most recent missed fire time once, then resumes.
	CatchUpLast CatchUp = "last"
	// CatchUpAll runs every missed fire time, oldest first, at most MaxCatchUp per call.
	CatchUpAll CatchUp = "all"
)

// ParseCatchUp parses "skip", "last" or "all"; "" is CatchUpSkip. Errors wrap
// ErrInvalidPolicy.
func ParseCatchUp(s string) (CatchUp, error) {
	switch c := CatchUp(s); c {
	case "":
		return CatchUpSkip, nil
	case CatchUpSkip, CatchUpLast, CatchUpAll:
		return c, nil
	}
	return "", fmt.Errorf("%w: catch-up %q (want skip, last or all)", ErrInvalidPolicy, s)
}

// Overlap says whether a schedule fires while the job of its previous fire is still running.
// The zero value means OverlapSkip.
type Overlap string

const (
	// OverlapSkip drops a fire time that comes due while the previous run is still going.
	OverlapSkip Overlap = "skip"
	// OverlapAllow fires regardless: runs may overlap.
	OverlapAllow Overlap = "allow"
)

// ParseOverlap parses "skip" or "allow"; "" is OverlapSkip. Errors wrap ErrInvalidPolicy.
func ParseOverlap(s string) (Overlap, error) {
	switch o := Overlap(s); o {
	case "":
		return OverlapSkip, nil
	case OverlapSkip, OverlapAllow:
		return o, nil
	}
	return "", fmt.Errorf("%w: overlap %q (want skip or allow)", ErrInvalidPolicy, s)
}

// Allows reports whether a due fire time may enqueue a job when running says the previous
// one is still running. A fire time it refuses is skipped, not postponed.
func (o Overlap) Allows(running bool) bool { return !running || o == OverlapAllow }

// Due returns the fire times to enqueue now, oldest first, and through, the latest fire time
// this call accounted for (enqueued or deliberately skipped), which the caller stores as the
// schedule's new last fire time so that no fire time is considered twice.
//
// last is the previous fire time, or for a fixed-delay spec (FromFinish) the time the previous
// run finished; for a schedule that never fired, its creation time. A zero last counts as
// now - grace. Fire times in (last, now] are due. Those no older than grace (DefaultGrace when
// grace <= 0) are on time, however the policy goes: a leader tick that is a little late still
// fires. The older ones are missed:
//
//   - CatchUpSkip ("" and unknown values too): only the on-time fire times;
//   - CatchUpLast: the on-time fire times, or if there are none the most recent missed one;
//   - CatchUpAll: every due fire time.
//
// At most MaxCatchUp are returned; when the cap cuts the list short, through is the last one
// returned, so the next call continues from there. A fixed-delay spec has at most one fire
// time due, last + interval, whatever the policy.
func Due(s *Spec, last, now time.Time, policy CatchUp, grace time.Duration) (fires []time.Time, through time.Time) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	if last.IsZero() {
		last = now.Add(-grace)
	}
	if s.FromFinish() {
		if next := s.Next(last); !next.After(now) {
			return []time.Time{next}, next
		}
		return nil, last
	}
	if policy == CatchUpAll {
		fires = s.Between(last, now, MaxCatchUp)
		if len(fires) == 0 {
			return nil, last
		}
		return fires, fires[len(fires)-1]
	}
	fires = s.Between(laterOf(last, now.Add(-grace)), now, MaxCatchUp)
	latest, ok := latestDue(s.Next, last, now)
	switch {
	case !ok:
		return nil, last
	case len(fires) == MaxCatchUp:
		return fires, fires[len(fires)-1]
	case len(fires) == 0 && policy == CatchUpLast:
		return []time.Time{latest}, latest
	}
	return fires, latest
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// maxWindow bounds latestDue's window so that it stays a valid time.Duration.
const maxWindow = 200 * 365 * 24 * time.Hour

// latestDue returns the last fire time in (after, until], given a spec's Next. It looks back
// over windows growing fourfold from one second, so that a frequent spec missed for months
// costs a few steps.
func latestDue(next func(time.Time) time.Time, after, until time.Time) (time.Time, bool) {
	for w := time.Second; ; w *= 4 {
		from := until.Add(-w)
		widest := w >= maxWindow || !from.After(after)
		if widest {
			from = after
		}
		if t := next(from); !t.IsZero() && !t.After(until) {
			for n := next(t); !n.IsZero() && !n.After(until); n = next(t) {
				t = n
			}
			return t, true
		}
		if widest {
			return time.Time{}, false
		}
	}
}

// Jitter returns a delay in [0, maxDelay) for the fire time fire of the schedule named key (0
// when maxDelay <= 0). It is a hash of both, not a random draw, so every node computes the same delay
// for one fire time and a leader that takes over mid-tick enqueues the same run time. Jitter
// only delays: a job never runs before its fire time.
func Jitter(fire time.Time, maxDelay time.Duration, key string) time.Duration {
	if maxDelay <= 0 {
		return 0
	}
	h := sha256.New()
	h.Write([]byte(key))
	var buf [13]byte // a zero byte, then the fire time's seconds and nanoseconds
	binary.BigEndian.PutUint64(buf[1:9], uint64(fire.Unix()))
	binary.BigEndian.PutUint32(buf[9:], uint32(fire.Nanosecond()))
	h.Write(buf[:])
	return time.Duration(binary.BigEndian.Uint64(h.Sum(nil)) % uint64(maxDelay))
}
