package hopper

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Rate is a rate limit: at most Limit job starts per Period (see RateLimit). The zero Rate is
// no limit.
type Rate = hoppertype.Rate

// The bounds of a rate limit.
const (
	MinRatePeriod = time.Millisecond
	MaxRatePeriod = 30 * 24 * time.Hour
)

// ParseRate reads a rate limit written N/DURATION: "100/1s", "5000/1h", "10/m" (a bare unit is
// one of it), with N from 1 to 2³¹−1 and DURATION a Go duration from 1ms to 720h. "0" is no
// limit (the zero Rate), which removes one. It returns a *ValidationError naming field for
// anything else, such as "0/1s" or "abc".
func ParseRate(field, s string) (Rate, error) {
	text := strings.TrimSpace(s)
	if text == "0" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(text, "/")
	if !ok {
		return Rate{}, invalid(field, "%q is not N/DURATION, such as 100/1s or 5000/1h (0 removes the limit)", s)
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if err != nil {
		return Rate{}, invalid(field, "%q: %q is not a whole number of job starts", s, n)
	}
	per = strings.TrimSpace(per)
	unit := per
	if per != "" && unicode.IsLetter(rune(per[0])) {
		unit = "1" + per // "10/m": one minute
	}
	period, err := time.ParseDuration(unit)
	if err != nil {
		return Rate{}, invalid(field, "%q: %q is not a duration such as 1s, 1m or 1h", s, per)
	}
	r := Rate{Limit: int(min(max(limit, -1), maxCap+1)), Period: period}
	if r.IsZero() { // "0/0": only "0" says no limit
		return Rate{}, invalid(field, "%q: the limit and the period are 0 (0 alone removes the limit)", s)
	}
	if err := checkRate(field, r); err != nil {
		return Rate{}, err
	}
	return r, nil
}

// checkRate checks a rate limit: the zero Rate (none), or 1 to 2³¹−1 starts per
// MinRatePeriod to MaxRatePeriod.
func checkRate(field string, r Rate) error {
	switch {
	case r.IsZero():
		return nil
	case r.Limit < 1 || r.Limit > maxCap:
		return invalid(field, "%d starts per period is outside 1–%d (0 removes the limit)", r.Limit, maxCap)
	case r.Period < MinRatePeriod || r.Period > MaxRatePeriod:
		return invalid(field, "the period %s is outside 1ms–720h", r.Period)
	case r.Period%time.Microsecond != 0:
		return invalid(field, "the period %s is not a whole number of microseconds", r.Period)
	}
	return nil
}

// RateLimit is a fleet-wide rate limit: at most Rate.Limit jobs of Queue, or of Kind, start
// per Rate.Period across every process and remote worker sharing the store. Set exactly one
// of Queue and Kind; the zero Rate removes the limit. Jobs over the limit stay queued and
// start as the limit allows; none fails or is lost. A queue's limit bounds all its jobs; a
// kind's bounds the kind's jobs in every queue. See docs/flow-control.md#rate-limits.
type RateLimit struct {
	Queue string
	Kind  string
	Rate  Rate
}

// SetRateLimit sets, changes or removes a fleet-wide rate limit. A new limit starts with a
// full bucket (Rate.Limit starts at once); a changed one keeps the starts its bucket holds, up
// to the new limit. Every process applies it from its next claim; one that waits for a start
// under the old limit looks again within a second. It returns a *ValidationError naming the
// bad field.
func (c *Client) SetRateLimit(ctx context.Context, l RateLimit) error {
	p, err := rateParams(l)
	if err != nil {
		return err
	}
	if err := c.store.RateSet(ctx, p); err != nil {
		return err
	}
	c.engine.Notify(l.Queue) // this process's producers of the queue (or, for a kind, all) look again
	return nil
}

// rateParams checks a rate limit and names what it applies to.
func rateParams(l RateLimit) (*store.RateParams, error) {
	if err := checkRate("rate", l.Rate); err != nil {
		return nil, err
	}
	scope, name, err := limitScope("rate_limit", l.Queue, l.Kind)
	return &store.RateParams{Scope: scope, Name: name, Rate: l.Rate}, err
}

// RateLimits returns every fleet-wide rate limit, queues first, by name.
func (c *Client) RateLimits(ctx context.Context) ([]RateLimit, error) {
	qs, err := c.store.QueueList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list rate limits: %w", err)
	}
	ks, err := c.store.KindList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list rate limits: %w", err)
	}
	var out []RateLimit
	for _, q := range qs {
		if !q.Rate.IsZero() {
			out = append(out, RateLimit{Queue: q.Name, Rate: q.Rate})
		}
	}
	for _, k := range ks {
		if !k.Rate.IsZero() {
			out = append(out, RateLimit{Kind: k.Name, Rate: k.Rate})
		}
	}
	return out, nil
}

// storeDeclaredLimits stores Config.Limits and Config.RateLimits (checked by NewClient).
func (c *Client) storeDeclaredLimits(ctx context.Context) error {
	for _, l := range c.cfg.Limits {
		if err := c.SetLimit(ctx, l); err != nil {
			return fmt.Errorf("store Config.Limits: %w", err)
		}
	}
	for _, l := range c.cfg.RateLimits {
		if err := c.SetRateLimit(ctx, l); err != nil {
			return fmt.Errorf("store Config.RateLimits: %w", err)
		}
	}
	return nil
}
