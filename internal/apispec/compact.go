package apispec

import (
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// CompactRequest is a CompactKind call as the API carries it.
func CompactRequest(kind string, o *hopper.CompactOpts) *hopperv1.KindServiceCompactRequest {
	req := &hopperv1.KindServiceCompactRequest{Kind: kind}
	if o != nil {
		req.GroupKey, req.Over, req.Merge = o.GroupKey, apiview.Int32(o.Over), string(o.Merge)
	}
	return req
}

// FromCompactRequest reads a CompactKind call.
func FromCompactRequest(req *hopperv1.KindServiceCompactRequest) (string, *hopper.CompactOpts) {
	return req.GetKind(), &hopper.CompactOpts{GroupKey: req.GetGroupKey(), Over: int(req.GetOver()),
		Merge: hopper.MergePolicy(req.GetMerge())}
}

// CompactResponse is what CompactKind did, as the API shows it.
func CompactResponse(r *hopper.CompactResult) *hopperv1.KindServiceCompactResponse {
	out := &hopperv1.KindServiceCompactResponse{Groups: apiview.Int32(r.Groups), Jobs: apiview.Int32(r.Jobs)}
	for _, g := range r.Compacted {
		out.Compacted = append(out.Compacted, &hopperv1.CompactedGroup{GroupKey: apiview.Text(g.GroupKey),
			NewJobId: g.NewJobID, Replaced: g.Replaced})
	}
	for _, g := range r.Refused {
		out.Refused = append(out.Refused, &hopperv1.RefusedGroup{GroupKey: apiview.Text(g.GroupKey),
			JobId: g.JobID, Reason: apiview.Text(g.Reason)})
	}
	return out
}

// FromCompactResponse reads what CompactKind did.
func FromCompactResponse(res *hopperv1.KindServiceCompactResponse) *hopper.CompactResult {
	out := &hopper.CompactResult{Groups: int(res.GetGroups()), Jobs: int(res.GetJobs())}
	for _, g := range res.GetCompacted() {
		out.Compacted = append(out.Compacted, &hopper.CompactedGroup{GroupKey: g.GetGroupKey(),
			NewJobID: g.GetNewJobId(), Replaced: g.GetReplaced()})
	}
	for _, g := range res.GetRefused() {
		out.Refused = append(out.Refused, &hopper.RefusedGroup{GroupKey: g.GetGroupKey(), JobID: g.GetJobId(),
			Reason: g.GetReason()})
	}
	return out
}
