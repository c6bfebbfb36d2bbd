package hopper

import (
	"context"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
)

// Rate is a rate limit: at most Limit job starts per Period (see RateLimit). The zero Rate is
// no limit.
type Rate = hoppertype.Rate

// The bounds of a rate limit.
const (
	MinRatePeriod = field.MinRatePeriod
	MaxRatePeriod = field.MaxRatePeriod
)

// ParseRate reads a rate limit written N/DURATION: "100/1s", "5000/1h", "10/m" (a bare unit is
// one of it), with N from 1 to 2³¹−1 and DURATION a Go duration from 1ms to 720h. "0" is no
// limit (the zero Rate), which removes one. It returns a *ValidationError naming field for
// anything else, such as "0/1s" or "abc".
func ParseRate(name, s string) (Rate, error) { return field.ParseRate(name, s) }

// checkRate checks a rate limit: the zero Rate (none), or 1 to 2³¹−1 starts per
// MinRatePeriod to MaxRatePeriod.
func checkRate(name string, r Rate) error { return field.CheckRate(name, r) }

// RateLimit is a fleet-wide rate limit: at most Rate.Limit jobs of Queue, or of Kind, start
// per Rate.Period across every process and remote worker sharing the store. Set exactly one
// of Queue and Kind; the zero Rate removes the limit. Jobs over the limit stay queued and
// start as the limit allows; none fails or is lost. A queue's limit bounds all its jobs; a
// kind's bounds the kind's jobs in every queue. See docs/flow-control.md#rate-limits.
//
// With PerKey it is a rate limit per fairness key instead (InsertOpts.FairnessKey): at most
// Rate.Limit jobs of each key of Queue, or of Kind (in every queue), start per Rate.Period.
// Jobs without a fairness key are not bound by it. See docs/flow-control.md#limits-per-key.
type RateLimit struct {
	Queue  string
	Kind   string
	Rate   Rate
	PerKey bool
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
	field := "rate"
	if l.PerKey {
		field = "rate_per_key"
	}
	if err := checkRate(field, l.Rate); err != nil {
		return nil, err
	}
	scope, name, err := limitScope("rate_limit", l.Queue, l.Kind)
	return &store.RateParams{Scope: scope, Name: name, Rate: l.Rate, PerKey: l.PerKey}, err
}

// RateLimits returns every fleet-wide rate limit, queues first, by name, then every rate
// limit per key (PerKey), queues first, by name.
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
	for _, q := range qs {
		if !q.RatePerKey.IsZero() {
			out = append(out, RateLimit{Queue: q.Name, Rate: q.RatePerKey, PerKey: true})
		}
	}
	for _, k := range ks {
		if !k.RatePerKey.IsZero() {
			out = append(out, RateLimit{Kind: k.Name, Rate: k.RatePerKey, PerKey: true})
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
