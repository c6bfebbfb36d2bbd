package hopperclient

import (
	"context"
	"fmt"

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
}

// SetKind changes the settings s gives of kind, all of them or, when one is refused (a
// *hopper.ValidationError naming it), none. Giving none is a *hopper.ValidationError naming
// settings. It needs the admin scope.
func (c *Client) SetKind(ctx context.Context, kind string, s KindSettings) error {
	if s.MaxRunning == nil && s.Rate == nil {
		// The server reads a request without either as an old client's "remove the cap".
		return fmt.Errorf("set kind %s: %w", kind, &hopper.ValidationError{Field: "settings", Reason: "set MaxRunning, Rate or both"})
	}
	_, err := c.kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: kind, MaxRunning: apiview.OptionalInt(s.MaxRunning),
		Rate: apiview.OptionalRate(s.Rate)})
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
