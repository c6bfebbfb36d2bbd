package hopperclient

import (
	"context"
	"fmt"
	"math"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Kinds returns every kind that has jobs or settings (a cap, a rate limit, disabled), by
// name, with its job counts per state. It needs the read scope.
func (c *Client) Kinds(ctx context.Context) ([]*hopper.KindInfo, error) {
	res, err := c.kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	if err != nil {
		return nil, callErr("list kinds", err)
	}
	out := make([]*hopper.KindInfo, len(res.GetKinds()))
	for i, k := range res.GetKinds() {
		out[i] = apispec.FromKind(k)
	}
	return out, nil
}

// KindSettings are a kind's fleet-wide settings to change: those not nil. 0 removes a cap,
// the zero Rate a rate limit.
type KindSettings struct {
	// MaxRunning caps the kind's running jobs across the fleet, in every queue.
	MaxRunning *int
	// Rate limits the kind's job starts across the fleet, in every queue.
	Rate *hopper.Rate
	// Compaction sets the leader's compaction of the kind's groups (Over 0 removes it).
	Compaction *hopper.Compaction
	// CapPerKey caps the kind's running jobs of each fairness key, and RatePerKey each key's
	// starts of the kind, across the fleet, in every queue (docs/flow-control.md#limits-per-key).
	CapPerKey  *int
	RatePerKey *hopper.Rate
}

// SetKind changes the settings s gives of kind, all of them or, when one is refused (a
// *hopper.ValidationError naming it), none. Giving none is a *hopper.ValidationError naming
// settings. It needs the admin scope.
func (c *Client) SetKind(ctx context.Context, kind string, s KindSettings) error {
	if s.MaxRunning == nil && s.Rate == nil && s.Compaction == nil && s.CapPerKey == nil && s.RatePerKey == nil {
		// The server reads a request without any as an old client's "remove the cap".
		return fmt.Errorf("set kind %s: %w", kind, &hopper.ValidationError{Field: "settings", Reason: "set MaxRunning, Rate, Compaction or more"})
	}
	req := &hopperv1.KindServiceSetRequest{Kind: kind, MaxRunning: apiview.OptionalInt(s.MaxRunning),
		Rate: apiview.OptionalRate(s.Rate), CapPerKey: apiview.OptionalInt(s.CapPerKey), RatePerKey: apiview.OptionalRate(s.RatePerKey)}
	if s.Compaction != nil {
		if s.Compaction.Over > math.MaxInt32 { // the API carries an int32
			return fmt.Errorf("set kind %s: %w", kind, &hopper.ValidationError{Field: "compact_over",
				Reason: fmt.Sprintf("%d is more than %d", s.Compaction.Over, math.MaxInt32)})
		}
		over := int32(s.Compaction.Over)
		req.CompactOver, req.CompactMerge = &over, string(s.Compaction.Merge)
	}
	_, err := c.kinds.Set(ctx, req)
	return callErr("set kind "+kind, err)
}

// DisableKind stops every process and remote worker from starting jobs of kind, in every
// queue; they wait in state queued, and running ones finish. It needs the admin scope.
func (c *Client) DisableKind(ctx context.Context, kind string) error {
	_, err := c.kinds.Disable(ctx, &hopperv1.KindServiceDisableRequest{Kind: kind})
	return callErr("disable kind "+kind, err)
}

// EnableKind lets a disabled kind's jobs start again. It needs the admin scope.
func (c *Client) EnableKind(ctx context.Context, kind string) error {
	_, err := c.kinds.Enable(ctx, &hopperv1.KindServiceEnableRequest{Kind: kind})
	return callErr("enable kind "+kind, err)
}

// CompactKind replaces, in each group of kind in which more than opts.Over jobs wait, those
// jobs by one new job (hopper.Client.CompactKind), recorded as done by an operator. Bad
// input is a *hopper.ValidationError naming the field. It needs the admin scope.
func (c *Client) CompactKind(ctx context.Context, kind string, opts *hopper.CompactOpts) (*hopper.CompactResult, error) {
	if opts != nil && opts.Over > math.MaxInt32 { // the API carries an int32; the server checks the rest
		return nil, fmt.Errorf("compact kind %s: %w", kind, &hopper.ValidationError{Field: "over",
			Reason: fmt.Sprintf("%d is not between 0 and %d", opts.Over, math.MaxInt32)})
	}
	res, err := c.kinds.Compact(ctx, apispec.CompactRequest(kind, opts))
	if err != nil {
		return nil, callErr("compact kind "+kind, err)
	}
	return apispec.FromCompactResponse(res), nil
}

// Lineage returns the jobs that job id replaced in a compaction (oldest first) and the job
// that replaced it ("" when none did). It needs the read scope.
func (c *Client) Lineage(ctx context.Context, id string) (from []string, into string, err error) {
	res, err := c.kinds.Lineage(ctx, &hopperv1.KindServiceLineageRequest{Id: id})
	if err != nil {
		return nil, "", callErr("lineage of job "+id, err)
	}
	return res.GetCompactedFrom(), res.GetCompactedInto(), nil
}
