// Package schedule computes when a recurring schedule fires: cron expressions and descriptors
// evaluated on the wall clock of an IANA time zone with Hopper's DST policy, fixed-rate and
// fixed-delay intervals in real elapsed time, and the catch-up, overlap and jitter rules the
// leader applies when it fires schedules. It stores nothing and reads no clock: callers pass
// every time in.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; nodes without /usr/share/zoneinfo must agree too

	"github.com/robfig/cron/v3"
)

// ErrInvalidSpec is wrapped by every error Parse and NewInterval return: a malformed cron
// field, an unknown descriptor or time zone, an interval under MinInterval.
var ErrInvalidSpec = errors.New("invalid schedule")

// MinInterval is the shortest interval NewInterval and "@every" accept.
const MinInterval = time.Second

// Kind says how a Spec computes its fire times.
type Kind int

const (
	// KindCron is a cron expression or descriptor, matched against the wall clock of the
	// spec's time zone.
	KindCron Kind = iota
	// KindFixedRate fires every interval of real elapsed time, at anchor + k·interval.
	KindFixedRate
	// KindFixedDelay fires one interval after the previous run finished.
	KindFixedDelay
)

// String returns "cron", "fixed-rate" or "fixed-delay".
func (k Kind) String() string {
	switch k {
	case KindCron:
		return "cron"
	case KindFixedRate:
		return "fixed-rate"
	case KindFixedDelay:
		return "fixed-delay"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Spec is a parsed schedule. It is immutable and safe for concurrent use.
type Spec struct {
	text     string
	kind     Kind
	loc      *time.Location
	match    matcher       // KindCron
	interval time.Duration // KindFixedRate, KindFixedDelay
	anchor   time.Time     // KindFixedRate
}

// cronParser parses the fields only; Next is ours (robfig's Next mishandles DST).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.Descriptor)

// Parse parses spec evaluated in the IANA time zone tz ("" means UTC). spec is one of
//
//   - a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (with a
//     leading seconds field): "*", lists "1,15", ranges "1-5", steps "*/10" and "8-18/2",
//     month and weekday names ("JAN", "mon"); day of month and day of week are ORed when both
//     are restricted, as in Vixie cron;
//   - a descriptor: @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly;
//   - "@every DURATION" (Go syntax, "90s", "1h30m", at least MinInterval): a KindFixedRate
//     spec anchored at the Unix epoch.
//
// The zone "Local" is refused: every node must compute the same fire times. Errors wrap
// ErrInvalidSpec and say what is wrong.
func Parse(spec, tz string) (*Spec, error) {
	loc, err := LoadZone(tz)
	if err != nil {
		return nil, err
	}
	spec = strings.TrimSpace(spec)
	if rest, ok := strings.CutPrefix(spec, "@every"); ok {
		return parseEvery(spec, rest, loc)
	}
	m, err := parseCron(spec)
	if err != nil {
		return nil, err
	}
	return &Spec{text: spec, kind: KindCron, loc: loc, match: m}, nil
}

// NewInterval returns a KindFixedRate or KindFixedDelay spec firing every d (at least
// MinInterval). A fixed-rate spec is anchored at the Unix epoch (see WithAnchor); a
// fixed-delay spec counts from the end of the previous run (see FromFinish). Its time zone,
// used only to present fire times, is UTC. Errors wrap ErrInvalidSpec.
func NewInterval(d time.Duration, kind Kind) (*Spec, error) {
	if kind != KindFixedRate && kind != KindFixedDelay {
		return nil, fmt.Errorf("%w: interval kind must be fixed-rate or fixed-delay, not %s", ErrInvalidSpec, kind)
	}
	if d < MinInterval {
		return nil, fmt.Errorf("%w: interval %s is shorter than %s", ErrInvalidSpec, d, MinInterval)
	}
	return &Spec{text: "@every " + d.String(), kind: kind, loc: time.UTC, interval: d,
		anchor: time.Unix(0, 0).UTC()}, nil
}

func parseEvery(spec, rest string, loc *time.Location) (*Spec, error) {
	arg := strings.TrimSpace(rest)
	if arg == "" || arg == rest {
		return nil, fmt.Errorf("%w: %q: want \"@every DURATION\", e.g. \"@every 90s\"", ErrInvalidSpec, spec)
	}
	d, err := time.ParseDuration(arg)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: bad duration %q (use Go syntax: 90s, 5m, 1h30m)", ErrInvalidSpec, spec, arg)
	}
	s, err := NewInterval(d, KindFixedRate)
	if err != nil {
		return nil, err
	}
	s.loc = loc
	return s, nil
}

// LoadZone returns the time zone named tz: an IANA name, or "" for UTC. "Local" is refused
// (it depends on the machine). Errors wrap ErrInvalidSpec; Parse returns them too, so a caller
// that must tell a bad zone from a bad spec calls LoadZone first.
func LoadZone(tz string) (*time.Location, error) {
	switch tz {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf("%w: time zone %q depends on the machine; name an IANA zone such as \"Europe/Berlin\"",
			ErrInvalidSpec, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%w: unknown time zone %q (want an IANA name such as \"America/New_York\")",
			ErrInvalidSpec, tz)
	}
	return loc, nil
}

// String returns the spec as parsed ("30 2 * * *", "@daily", "@every 1m30s"). Parse of it,
// with the same zone, gives an equal spec for KindCron and KindFixedRate (the anchor aside).
func (s *Spec) String() string { return s.text }

// Kind says whether s is a cron spec or a fixed-rate or fixed-delay interval.
func (s *Spec) Kind() Kind { return s.kind }

// Location is the time zone fire times are computed (cron) and presented (intervals) in.
func (s *Spec) Location() *time.Location { return s.loc }

// Interval is the interval of a fixed-rate or fixed-delay spec; 0 for a cron spec.
func (s *Spec) Interval() time.Duration { return s.interval }

// FromFinish reports whether Next counts from the end of the previous run (fixed-delay)
// rather than from the previous fire time (cron and fixed-rate). The caller passes the
// matching reference time to Next and Due.
func (s *Spec) FromFinish() bool { return s.kind == KindFixedDelay }

// WithAnchor returns a copy of a fixed-rate spec that fires at anchor + k·interval instead of
// at multiples of the interval since the Unix epoch. Other kinds are returned unchanged.
func (s *Spec) WithAnchor(anchor time.Time) *Spec {
	if s.kind != KindFixedRate {
		return s
	}
	c := *s
	c.anchor = anchor
	return &c
}
