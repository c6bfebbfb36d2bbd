// Package apispec converts between the hopper package's values (InsertOpts, ListParams,
// QueueInfo, KindInfo, Schedule, the dead letters' filters and stats…) and the messages of
// its API, both ways, on top of package apiview, which does the plain values: between them,
// the one place where Go values and the API's messages meet.
package apispec

import (
	"encoding/json"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// JobSpec is a job to enqueue as the API carries it: its kind, its args (JSON) and its
// options (nil: all defaults). The API does not carry InsertOpts.ResultTTL (the server's
// --result-ttl applies): a job that sets it is a *hopper.ValidationError naming result_ttl,
// rather than enqueued without it.
func JobSpec(kind string, args json.RawMessage, o *hopper.InsertOpts) (*hopperv1.JobSpec, error) {
	spec := &hopperv1.JobSpec{Kind: kind, Args: string(args)}
	if o == nil {
		return spec, nil
	}
	if o.ResultTTL != 0 {
		return nil, &hopper.ValidationError{Field: "result_ttl",
			Reason: "a server's API does not take it: the server's own (hopper serve --result-ttl) applies"}
	}
	spec.Queue, spec.Priority = o.Queue, apiview.Int32(o.Priority)
	spec.RunAt, spec.Delay = apiview.Time(o.RunAt), apiview.Duration(o.Delay)
	spec.MaxAttempts, spec.MaxRescues = apiview.Int32(o.MaxAttempts), apiview.Int32(o.MaxRescues)
	spec.Timeout, spec.RetryPolicy, spec.Headers = apiview.Duration(o.Timeout), apiview.RetryPolicy(o.RetryPolicy), o.Headers
	spec.IdempotencyKey, spec.IdempotencyRetention = o.IdempotencyKey, apiview.Duration(o.IdempotencyRetention)
	spec.GroupKey, spec.MergeKey, spec.Merge = o.GroupKey, o.MergeKey, string(o.Merge)
	spec.FairnessKey = o.FairnessKey
	spec.After, spec.OnParentFailure = o.After, string(o.OnParentFailure)
	return spec, nil
}

// FromJobSpec reads a job to enqueue; its args default to {}. A nil spec is a
// *hopper.ValidationError naming job. The values are the caller's: the client checks them
// when it enqueues.
func FromJobSpec(spec *hopperv1.JobSpec) (hopper.EnqueueParams, error) {
	if spec == nil {
		return hopper.EnqueueParams{}, &hopper.ValidationError{Field: "job", Reason: "is required"}
	}
	args := spec.GetArgs()
	if args == "" {
		args = "{}"
	}
	opts := &hopper.InsertOpts{
		Queue: spec.GetQueue(), Priority: int(spec.GetPriority()),
		RunAt: apiview.FromTime(spec.GetRunAt()), Delay: apiview.FromDuration(spec.GetDelay()),
		MaxAttempts: int(spec.GetMaxAttempts()), MaxRescues: int(spec.GetMaxRescues()),
		Timeout: apiview.FromDuration(spec.GetTimeout()), RetryPolicy: apiview.FromRetryPolicy(spec.GetRetryPolicy()),
		Headers: spec.GetHeaders(), IdempotencyKey: spec.GetIdempotencyKey(),
		IdempotencyRetention: apiview.FromDuration(spec.GetIdempotencyRetention()), GroupKey: spec.GetGroupKey(),
		MergeKey: spec.GetMergeKey(), Merge: hopper.MergePolicy(spec.GetMerge()), FairnessKey: spec.GetFairnessKey(),
		After: spec.GetAfter(), OnParentFailure: hopper.ParentPolicy(spec.GetOnParentFailure()),
	}
	return hopper.EnqueueParams{Args: hopper.RawArgs{KindName: spec.GetKind(), JSON: json.RawMessage(args)}, Opts: opts}, nil
}

// ListRequest is a page of jobs to list as the API asks for it (p nil: the first page of
// every job). The API does not carry ListParams.ArgsContains: a filter on it is a
// *hopper.ValidationError naming args_contains, rather than a list that ignores it.
func ListRequest(p *hopper.ListParams) (*hopperv1.ListRequest, error) {
	if p == nil {
		return &hopperv1.ListRequest{}, nil
	}
	if p.ArgsContains != "" {
		return nil, &hopper.ValidationError{Field: "args_contains", Reason: "a server's API does not filter on it"}
	}
	req := &hopperv1.ListRequest{Queues: p.Queues, Kinds: p.Kinds, Cursor: p.Cursor, Limit: apiview.Int32(p.Limit),
		Ascending: p.Ascending, CreatedAfter: apiview.Time(p.CreatedAfter), CreatedBefore: apiview.Time(p.CreatedBefore),
		ErrorCodes: p.ErrorCodes, FairnessKeys: p.FairnessKeys}
	for _, s := range p.States {
		req.States = append(req.States, string(s))
	}
	return req, nil
}

// FromListRequest reads a page of jobs to list.
func FromListRequest(req *hopperv1.ListRequest) *hopper.ListParams {
	p := &hopper.ListParams{Queues: req.GetQueues(), Kinds: req.GetKinds(), Cursor: req.GetCursor(),
		Limit: int(req.GetLimit()), Ascending: req.GetAscending(),
		CreatedAfter: apiview.FromTime(req.GetCreatedAfter()), CreatedBefore: apiview.FromTime(req.GetCreatedBefore()),
		ErrorCodes: req.GetErrorCodes(), FairnessKeys: req.GetFairnessKeys()}
	for _, st := range req.GetStates() {
		p.States = append(p.States, hopper.JobState(st))
	}
	return p
}
