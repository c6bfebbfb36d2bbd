package apiview

import (
	"encoding/json"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
)

// Fan-out at run time (docs/workflows.md): a spawned job between a remote worker and the
// server. The options are those of apispec.JobSpec, from the attempt's side of them.

// SpawnJob is j as WorkerService.Spawn carries it. The API does not carry ResultTTL (the
// server's --result-ttl applies): a job that sets it is a *ValidationError naming result_ttl.
func SpawnJob(j *attempt.SpawnJob) (*hopperv1.SpawnJob, error) {
	o := j.Opts
	if o.ResultTTL != 0 {
		return nil, &hoppertype.ValidationError{Field: "result_ttl",
			Reason: "a server's API does not take it: the server's own (hopper serve --result-ttl) applies"}
	}
	return &hopperv1.SpawnJob{Step: j.Step, Job: &hopperv1.JobSpec{Kind: j.Kind, Args: string(j.Args),
		Queue: o.Queue, Priority: Int32(o.Priority), RunAt: Time(o.RunAt), Delay: Duration(o.Delay),
		MaxAttempts: Int32(o.MaxAttempts), MaxRescues: Int32(o.MaxRescues), Timeout: Duration(o.Timeout),
		RetryPolicy: RetryPolicy(o.RetryPolicy), Headers: o.Headers, IdempotencyKey: o.IdempotencyKey,
		IdempotencyRetention: Duration(o.IdempotencyRetention), GroupKey: o.GroupKey, MergeKey: o.MergeKey,
		FairnessKey: o.FairnessKey, After: o.After, OnParentFailure: string(o.OnParentFailure)},
		AfterSteps: j.AfterSteps}, nil
}

// FromSpawnJob reads a spawned job; its args default to {}. A missing job is a
// *ValidationError naming job. The values are the caller's: the client checks them.
func FromSpawnJob(s *hopperv1.SpawnJob) (*attempt.SpawnJob, error) {
	spec := s.GetJob()
	if spec == nil {
		return nil, &hoppertype.ValidationError{Field: "job", Reason: "is required"}
	}
	args := spec.GetArgs()
	if args == "" {
		args = "{}"
	}
	return &attempt.SpawnJob{Step: s.GetStep(), Kind: spec.GetKind(), Args: json.RawMessage(args), Opts: attempt.SpawnOpts{
		Queue: spec.GetQueue(), Priority: int(spec.GetPriority()), RunAt: FromTime(spec.GetRunAt()),
		Delay: FromDuration(spec.GetDelay()), MaxAttempts: int(spec.GetMaxAttempts()), MaxRescues: int(spec.GetMaxRescues()),
		Timeout: FromDuration(spec.GetTimeout()), RetryPolicy: FromRetryPolicy(spec.GetRetryPolicy()),
		Headers: spec.GetHeaders(), IdempotencyKey: spec.GetIdempotencyKey(),
		IdempotencyRetention: FromDuration(spec.GetIdempotencyRetention()), GroupKey: spec.GetGroupKey(),
		MergeKey: spec.GetMergeKey(), FairnessKey: spec.GetFairnessKey(), After: spec.GetAfter(),
		OnParentFailure: hoppertype.ParentPolicy(spec.GetOnParentFailure())}, AfterSteps: s.GetAfterSteps()}, nil
}
