package cli

import (
	"context"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
)

func (l local) SetKind(ctx context.Context, kind string, s settings) error {
	return l.setLimits(ctx, "", kind, s)
}

func (r *remote) Kinds(ctx context.Context) ([]*hopper.KindInfo, error) {
	res, err := r.kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	if err != nil {
		return nil, remoteErr(err)
	}
	out := make([]*hopper.KindInfo, len(res.GetKinds()))
	for i, k := range res.GetKinds() {
		out[i] = &hopper.KindInfo{Name: k.GetName(), Disabled: k.GetDisabled(), MaxRunning: int(k.GetMaxRunning()),
			Counts: fromCounts(k.GetCounts()), Rate: rateOf(k.GetRate())}
	}
	return out, nil
}

func (r *remote) SetKind(ctx context.Context, kind string, s settings) error {
	_, err := r.kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: kind, MaxRunning: int32Ptr(s.Cap), Rate: rateField(s.Rate)})
	return remoteErr(err)
}

func (r *remote) DisableKind(ctx context.Context, kind string) error {
	_, err := r.kinds.Disable(ctx, &hopperv1.KindServiceDisableRequest{Kind: kind})
	return remoteErr(err)
}

func (r *remote) EnableKind(ctx context.Context, kind string) error {
	_, err := r.kinds.Enable(ctx, &hopperv1.KindServiceEnableRequest{Kind: kind})
	return remoteErr(err)
}
