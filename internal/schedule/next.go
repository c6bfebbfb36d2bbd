package schedule

import (
	"math/big"
	"time"
)

// SearchYears bounds Next's search for a cron spec: past this many years after its argument
// it gives up and returns the zero time. Eight years separate two 29 Februaries at most.
const SearchYears = 9

// Next returns the first fire time strictly after after, in s's time zone, or the zero time
// when none comes within SearchYears. Parse refuses cron specs that can never fire (30
// February), so a zero result only happens near the end of the time package's range.
// Successive calls t = s.Next(t) strictly increase.
//
// For a fixed-delay spec after is the time the previous run finished and Next returns
// after + interval. For a fixed-rate spec it is anchor + k·interval for the least such time
// after after, in real elapsed time: DST changes nothing.
//
// A cron spec matches wall-clock times of its zone and fires at the first instant at which the
// zone's clock shows a matching time or a later one. So:
//
//   - a time skipped by a spring-forward gap fires once, at the first instant after the jump
//     ("30 2 * * *" in America/New_York on 2026-03-08 fires at 03:00 EDT); several times in one
//     gap ("*/15 2 * * *") fire once together;
//   - a time repeated by a fall-back fires once, on its first occurrence ("30 1 * * *" in New
//     York on 2026-11-01 fires at 01:30 EDT and not at 01:30 EST); a spec matching every
//     minute or hour does not fire again while the clock repeats times it already fired (each
//     wall-clock time fires at most once).
func (s *Spec) Next(after time.Time) time.Time {
	switch s.kind {
	case KindFixedDelay:
		return after.Add(s.interval).In(s.loc)
	case KindFixedRate:
		return nextRate(s.anchor, s.interval, after).In(s.loc)
	}
	return s.nextWall(after)
}

// Between returns the fire times in (after, until], oldest first, at most limit of them
// (none when limit <= 0). For a fixed-delay spec it assumes each run takes no time, which is
// only useful for a preview.
func (s *Spec) Between(after, until time.Time, limit int) []time.Time {
	var out []time.Time
	for len(out) < limit {
		t := s.Next(after)
		if t.IsZero() || t.After(until) {
			break
		}
		out = append(out, t)
		after = t
	}
	return out
}

// nextRate returns anchor + k·d for the least k with a result after after. The arithmetic is
// exact for any pair of times (a time.Duration spans only 292 years).
func nextRate(anchor time.Time, d time.Duration, after time.Time) time.Time {
	const nsPerSec = int64(time.Second)
	delta := big.NewInt(after.Unix() - anchor.Unix())
	delta.Mul(delta, big.NewInt(nsPerSec))
	delta.Add(delta, big.NewInt(int64(after.Nanosecond()-anchor.Nanosecond())))
	k := new(big.Int).Div(delta, big.NewInt(int64(d))) // Euclidean: floor for d > 0
	k.Add(k, big.NewInt(1))
	offset := k.Mul(k, big.NewInt(int64(d)))
	sec, ns := new(big.Int).DivMod(offset, big.NewInt(nsPerSec), new(big.Int))
	return time.Unix(anchor.Unix()+sec.Int64(), int64(anchor.Nanosecond())+ns.Int64())
}

// nextWall walks the civil (wall-clock) times matching s after after's wall-clock time and
// returns the first whose instant, as resolve maps it, is after after. resolve is
// non-decreasing, so the walk can start at after's own wall-clock time: nothing before it maps
// past after.
func (s *Spec) nextWall(after time.Time) time.Time {
	c := civil(after.In(s.loc)).Truncate(time.Second).Add(time.Second)
	limit := c.Year() + SearchYears
	for {
		var ok bool
		if c, ok = s.match.next(c, limit); !ok {
			return time.Time{}
		}
		if t := resolve(c, s.loc); t.After(after) {
			return t
		}
		// c fell in a repeated hour whose first occurrence is already past, or in a gap
		// whose fire time is after itself.
		c = c.Add(time.Second)
	}
}

// civil returns t's wall-clock reading coded as a UTC time, where every day has 24 hours.
func civil(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// resolve maps the civil time c to the first instant at which loc's clock shows c or a later
// time: c's only instant; its first one if a fall-back repeats it; the end of the gap if a
// spring-forward skips it.
func resolve(c time.Time, loc *time.Location) time.Time {
	t := time.Date(c.Year(), c.Month(), c.Day(), c.Hour(), c.Minute(), c.Second(), 0, loc)
	start, end := t.ZoneBounds()
	switch w := civil(t); {
	case w.After(c): // in a gap; time.Date used the old offset and landed after the jump
		return start
	case w.Before(c): // in a gap; time.Date used the new offset and landed before the jump
		return end
	}
	if start.IsZero() {
		return t
	}
	// If the previous zone period also showed c, c is repeated and the earlier instant wins.
	_, prevOffset := start.Add(-time.Nanosecond).Zone()
	earlier := time.Unix(c.Unix()-int64(prevOffset), 0).In(loc)
	if earlier.Before(start) && civil(earlier).Equal(c) {
		return earlier
	}
	return t
}
