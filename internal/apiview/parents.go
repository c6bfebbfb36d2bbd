package apiview

import (
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
)

// ParentResults are a job's parents as the API shows them (WorkerService.ParentResults,
// ActivatedJob.parent_results): stored text the wire cannot carry becomes U+FFFD, as in Job.
func ParentResults(ps []*hoppertype.ParentResult) []*hopperv1.ParentResult {
	out := make([]*hopperv1.ParentResult, len(ps))
	for i, p := range ps {
		out[i] = &hopperv1.ParentResult{Id: Text(p.ID), Kind: Text(p.Kind), Step: Text(p.Step), Outcome: Text(string(p.Outcome)),
			State: Text(string(p.State)), Result: Payload(p.Result), Error: Text(p.Error),
			FinishedAt: Time(p.FinishedAt), Expired: p.Expired}
	}
	return out
}

// FromParentResults reads a job's parents from the API.
func FromParentResults(ps []*hopperv1.ParentResult) []*hoppertype.ParentResult {
	out := make([]*hoppertype.ParentResult, len(ps))
	for i, p := range ps {
		out[i] = &hoppertype.ParentResult{ID: p.GetId(), Kind: p.GetKind(), Step: p.GetStep(),
			Outcome: hoppertype.ParentOutcome(p.GetOutcome()), State: hoppertype.JobState(p.GetState()),
			Result: FromPayload(p.GetResult()), Error: p.GetError(), FinishedAt: FromTime(p.GetFinishedAt()),
			Expired: p.GetExpired()}
	}
	return out
}
