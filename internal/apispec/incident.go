package apispec

import (
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// RetryRequest is a retry in place of job id as the API asks for it (contract 18). Who
// retried is the caller's, not the request's.
func RetryRequest(id string, o hopper.RetryOpts) *hopperv1.JobServiceRetryRequest {
	return &hopperv1.JobServiceRetryRequest{Id: id, Retries: apiview.Int32(o.Retries), Args: string(o.Args),
		RunAt: apiview.Time(o.RunAt), Reason: o.Reason, Again: o.Again}
}

// FromRetryRequest reads a retry in place: the job's id and the options.
func FromRetryRequest(r *hopperv1.JobServiceRetryRequest) (string, hopper.RetryOpts) {
	return r.GetId(), hopper.RetryOpts{Retries: int(r.GetRetries()), Args: apiview.FromPayload(r.GetArgs()),
		RunAt: apiview.FromTime(r.GetRunAt()), Reason: r.GetReason(), Again: r.GetAgain()}
}

// RetryManyRequest is a bulk retry in place as the API asks for it.
func RetryManyRequest(f hopper.DeadLetterFilter, o hopper.RetryManyOpts) *hopperv1.DeadLetterServiceRetryManyRequest {
	return &hopperv1.DeadLetterServiceRetryManyRequest{Filter: DeadLetterFilter(f), Limit: apiview.Int32(o.Limit),
		Retries: apiview.Int32(o.Retries), Reason: o.Reason}
}

// FromRetryManyRequest reads a bulk retry in place.
func FromRetryManyRequest(r *hopperv1.DeadLetterServiceRetryManyRequest) (hopper.DeadLetterFilter, hopper.RetryManyOpts) {
	return FromDeadLetterFilter(r.GetFilter()), hopper.RetryManyOpts{Limit: int(r.GetLimit()),
		Retries: int(r.GetRetries()), Reason: r.GetReason()}
}
