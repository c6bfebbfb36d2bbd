package server

import (
	"context"
	"fmt"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
	"google.golang.org/protobuf/proto"
)

// kindService implements hopper.v1.KindService. The client validates the requests.
type kindService struct{ s *Server }

func (k *kindService) List(ctx context.Context, _ *hopperv1.KindServiceListRequest) (*hopperv1.KindServiceListResponse, error) {
	ks, err := k.s.client.Kinds(ctx)
	if err != nil {
		return nil, rpcError("list kinds", err)
	}
	out := &hopperv1.KindServiceListResponse{Kinds: make([]*hopperv1.Kind, len(ks))}
	for i, info := range ks {
		out.Kinds[i] = apispec.Kind(info)
	}
	return out, nil
}

// Set applies the settings the request carries, once all of them are known to be valid.
func (k *kindService) Set(ctx context.Context, req *hopperv1.KindServiceSetRequest) (*hopperv1.KindServiceSetResponse, error) {
	maxRunning := req.MaxRunning
	if maxRunning == nil && req.Rate == nil && req.CompactOver == nil && req.CapPerKey == nil && req.RatePerKey == nil {
		// What a request with max_running 0 looked like on the wire before the field was
		// optional (a client built from that API removing a cap): it still removes the cap.
		maxRunning = proto.Int32(0)
	}
	switch {
	case req.GetKind() == "": // SetLimit would name its Limit, which this request does not have
		return nil, invalidArg("kind", "is empty")
	case maxRunning != nil && *maxRunning < 0: // checked first: a refused request changes nothing
		return nil, invalidArg("max_running", fmt.Sprintf("%d is negative (0 removes the cap)", *maxRunning))
	case req.CapPerKey != nil && *req.CapPerKey < 0:
		return nil, invalidArg("cap_per_key", fmt.Sprintf("%d is negative (0 removes the cap)", *req.CapPerKey))
	case req.CompactOver != nil && *req.CompactOver < 0:
		return nil, invalidArg("compact_over", fmt.Sprintf("%d is negative (0 removes the setting)", *req.CompactOver))
	case req.GetCompactMerge() != "" && req.CompactOver == nil:
		return nil, invalidArg("compact_merge", "needs compact_over")
	case req.GetCompactMerge() != "" && !hopper.MergePolicy(req.GetCompactMerge()).Valid():
		return nil, invalidArg("compact_merge", fmt.Sprintf("%q is not one of keep, replace, append", req.GetCompactMerge()))
	}
	rate, err := apiview.FromOptionalRate(req.Rate)
	if err != nil {
		return nil, rpcError("set kind rate limit", err)
	}
	ratePerKey, err := apiview.FromOptionalRateField("rate_per_key", req.RatePerKey)
	if err != nil {
		return nil, rpcError("set kind rate limit per key", err)
	}
	if maxRunning != nil {
		if err := k.s.client.SetLimit(ctx, hopper.Limit{Kind: req.GetKind(), MaxRunning: int(*maxRunning)}); err != nil {
			return nil, rpcError("set kind cap", err)
		}
	}
	if rate != nil {
		if err := k.s.client.SetRateLimit(ctx, hopper.RateLimit{Kind: req.GetKind(), Rate: *rate}); err != nil {
			return nil, rpcError("set kind rate limit", err)
		}
	}
	if req.CapPerKey != nil {
		if err := k.s.client.SetLimit(ctx, hopper.Limit{Kind: req.GetKind(), MaxRunning: int(*req.CapPerKey), PerKey: true}); err != nil {
			return nil, rpcError("set kind cap per key", err)
		}
	}
	if ratePerKey != nil {
		if err := k.s.client.SetRateLimit(ctx, hopper.RateLimit{Kind: req.GetKind(), Rate: *ratePerKey, PerKey: true}); err != nil {
			return nil, rpcError("set kind rate limit per key", err)
		}
	}
	if req.CompactOver != nil {
		c := hopper.Compaction{Over: int(*req.CompactOver), Merge: hopper.MergePolicy(req.GetCompactMerge())}
		if err := k.s.client.SetKindCompaction(ctx, req.GetKind(), c); err != nil {
			return nil, rpcError("set kind compaction", err)
		}
	}
	return &hopperv1.KindServiceSetResponse{}, nil
}

func (k *kindService) Disable(ctx context.Context, req *hopperv1.KindServiceDisableRequest) (*hopperv1.KindServiceDisableResponse, error) {
	if err := k.s.client.DisableKind(ctx, req.GetKind()); err != nil {
		return nil, rpcError("disable kind", err)
	}
	return &hopperv1.KindServiceDisableResponse{}, nil
}

func (k *kindService) Enable(ctx context.Context, req *hopperv1.KindServiceEnableRequest) (*hopperv1.KindServiceEnableResponse, error) {
	if err := k.s.client.EnableKind(ctx, req.GetKind()); err != nil {
		return nil, rpcError("enable kind", err)
	}
	return &hopperv1.KindServiceEnableResponse{}, nil
}

// Compact compacts the kind's groups, recorded as done by an operator (an admin action).
func (k *kindService) Compact(ctx context.Context, req *hopperv1.KindServiceCompactRequest) (*hopperv1.KindServiceCompactResponse, error) {
	kind, opts := apispec.FromCompactRequest(req)
	res, err := k.s.client.CompactKindBy(ctx, kind, opts, hopper.ActorOperator)
	if err != nil {
		return nil, rpcError("compact kind", err)
	}
	return apispec.CompactResponse(res), nil
}

// Lineage returns the compactions job req.Id took part in.
func (k *kindService) Lineage(ctx context.Context, req *hopperv1.KindServiceLineageRequest) (*hopperv1.KindServiceLineageResponse, error) {
	from, err := k.s.client.CompactedFrom(ctx, req.GetId())
	if err != nil {
		return nil, rpcError("job lineage", err)
	}
	into, err := k.s.client.CompactedInto(ctx, req.GetId())
	if err != nil {
		return nil, rpcError("job lineage", err)
	}
	return &hopperv1.KindServiceLineageResponse{CompactedFrom: from, CompactedInto: into}, nil
}
