package apiview

import (
	"encoding/json"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
)

// Job is j as the API shows it. stalled is whether j counts as stalled for whoever shows it
// (JobRow.Stalled with their clock and threshold).
func Job(j *hoppertype.JobRow, stalled bool) *hopperv1.Job {
	return &hopperv1.Job{
		Id: Text(j.ID), Kind: Text(j.Kind), Queue: Text(j.Queue), Priority: int32(j.Priority),
		Args: Payload(j.Args), Headers: Headers(j.Headers), State: string(j.State),
		Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts), LeaseToken: j.Token,
		RunAt: Time(j.RunAt), Timeout: Duration(j.Timeout), WorkerId: Text(j.WorkerID),
		LeaseExpiresAt: Time(j.LeaseExpiresAt), HeartbeatAt: Time(j.HeartbeatAt),
		ProgressPercent: int32(j.ProgressPercent), ProgressMessage: Text(j.ProgressMessage),
		Result: Payload(j.Result), LastError: Text(j.LastError), IdempotencyKey: Text(j.IdempotencyKey),
		GroupKey: Text(j.GroupKey), OriginalId: Text(j.OriginalID), ReplayCount: int32(j.ReplayCount),
		ReplayedBy: Text(j.ReplayedBy), CreatedAt: Time(j.CreatedAt), StartedAt: Time(j.StartedAt),
		FinishedAt: Time(j.FinishedAt), UpdatedAt: Time(j.UpdatedAt), ExpiresAt: Time(j.ExpiresAt),
		Stalled: stalled, Checkpoint: Payload(j.Checkpoint), DeadlineAt: Time(j.DeadlineAt),
		ResumeData: Payload(j.ResumeData), Rescues: int32(j.Rescues), MaxRescues: int32(j.MaxRescues),
		MergeKey: Text(j.MergeKey), LastErrorCode: Text(j.LastErrorCode), FairnessKey: Text(j.FairnessKey),
		HasChildren: j.HasChildren, WorkflowId: Text(j.WorkflowID), Step: Text(j.Step),
	}
}

// FromJob reads a job the API showed. The API does not carry a job's retry policy, result
// TTL or schedule: those fields stay zero. Nil reads as nil.
func FromJob(j *hopperv1.Job) *hoppertype.JobRow {
	if j == nil {
		return nil
	}
	return &hoppertype.JobRow{
		ID: j.GetId(), Kind: j.GetKind(), Queue: j.GetQueue(), Priority: int(j.GetPriority()),
		Args: FromPayload(j.GetArgs()), Headers: j.GetHeaders(), State: hoppertype.JobState(j.GetState()),
		Attempt: int(j.GetAttempt()), MaxAttempts: int(j.GetMaxAttempts()), Token: j.GetLeaseToken(),
		Rescues: int(j.GetRescues()), MaxRescues: int(j.GetMaxRescues()),
		RunAt: FromTime(j.GetRunAt()), Timeout: FromDuration(j.GetTimeout()), WorkerID: j.GetWorkerId(),
		LeaseExpiresAt: FromTime(j.GetLeaseExpiresAt()), HeartbeatAt: FromTime(j.GetHeartbeatAt()),
		ProgressPercent: int(j.GetProgressPercent()), ProgressMessage: j.GetProgressMessage(),
		Result: FromPayload(j.GetResult()), LastError: j.GetLastError(), LastErrorCode: j.GetLastErrorCode(),
		Checkpoint: FromPayload(j.GetCheckpoint()), ResumeData: FromPayload(j.GetResumeData()),
		IdempotencyKey: j.GetIdempotencyKey(), GroupKey: j.GetGroupKey(), MergeKey: j.GetMergeKey(),
		FairnessKey: j.GetFairnessKey(), OriginalID: j.GetOriginalId(), ReplayCount: int(j.GetReplayCount()), ReplayedBy: j.GetReplayedBy(),
		CreatedAt: FromTime(j.GetCreatedAt()), StartedAt: FromTime(j.GetStartedAt()),
		FinishedAt: FromTime(j.GetFinishedAt()), UpdatedAt: FromTime(j.GetUpdatedAt()),
		ExpiresAt: FromTime(j.GetExpiresAt()), DeadlineAt: FromTime(j.GetDeadlineAt()),
		HasChildren: j.GetHasChildren(), WorkflowID: j.GetWorkflowId(), Step: j.GetStep(),
	}
}

// Event is one state transition of a job as the API shows it.
func Event(e *hoppertype.Event) *hopperv1.Event {
	return &hopperv1.Event{Seq: e.Seq, At: Time(e.At), From: Text(string(e.From)), To: Text(string(e.To)),
		Actor: Text(string(e.Actor)), Reason: Text(e.Reason)}
}

// FromEvent reads one state transition of the job jobID (the message does not repeat it).
func FromEvent(jobID string, e *hopperv1.Event) *hoppertype.Event {
	return &hoppertype.Event{JobID: jobID, Seq: e.GetSeq(), At: FromTime(e.GetAt()),
		From: hoppertype.JobState(e.GetFrom()), To: hoppertype.JobState(e.GetTo()),
		Actor: hoppertype.Actor(e.GetActor()), Reason: e.GetReason()}
}

// Attempt is one attempt of a job as the API shows it.
func Attempt(a *hoppertype.AttemptRecord) *hopperv1.Attempt {
	return &hopperv1.Attempt{LeaseToken: a.Token, Attempt: int32(a.Attempt), WorkerId: Text(a.WorkerID),
		StartedAt: Time(a.StartedAt), EndedAt: Time(a.EndedAt), Outcome: Text(string(a.Outcome)),
		Error: Text(a.Error), Stack: Text(a.Stack), ErrorCode: Text(a.ErrorCode)}
}

// FromAttempt reads one attempt of the job jobID (the message does not repeat it).
func FromAttempt(jobID string, a *hopperv1.Attempt) *hoppertype.AttemptRecord {
	return &hoppertype.AttemptRecord{JobID: jobID, Token: a.GetLeaseToken(), Attempt: int(a.GetAttempt()),
		WorkerID: a.GetWorkerId(), StartedAt: FromTime(a.GetStartedAt()), EndedAt: FromTime(a.GetEndedAt()),
		Outcome: hoppertype.Outcome(a.GetOutcome()), Error: a.GetError(), Stack: a.GetStack(),
		ErrorCode: a.GetErrorCode()}
}

// ActivatedJob is what a remote worker gets for the claimed job j: its values exactly (the
// server fails a job it cannot deliver so, rather than show it with U+FFFD), and
// defaultTimeout, the server's execution limit for a job without one of its own.
func ActivatedJob(j *hoppertype.JobRow, defaultTimeout time.Duration) *hopperv1.ActivatedJob {
	return &hopperv1.ActivatedJob{
		Id: j.ID, Kind: j.Kind, Queue: j.Queue, Args: string(j.Args), Headers: j.Headers,
		Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts), LeaseToken: j.Token,
		LeaseExpiresAt: Time(j.LeaseExpiresAt), Timeout: Duration(j.Timeout), CreatedAt: Time(j.CreatedAt),
		RetryPolicy: RetryPolicy(j.RetryPolicy), Checkpoint: string(j.Checkpoint),
		ResumeData: string(j.ResumeData), DefaultTimeout: Duration(defaultTimeout),
	}
}

// FromActivatedJob is the running job a remote worker named worker was handed, as its handler
// sees it.
func FromActivatedJob(a *hopperv1.ActivatedJob, worker string) *hoppertype.JobRow {
	return &hoppertype.JobRow{
		ID: a.GetId(), Kind: a.GetKind(), Queue: a.GetQueue(), Args: json.RawMessage(a.GetArgs()),
		Headers: a.GetHeaders(), State: hoppertype.StateRunning, Attempt: int(a.GetAttempt()),
		MaxAttempts: int(a.GetMaxAttempts()), Token: a.GetLeaseToken(), WorkerID: worker,
		LeaseExpiresAt: FromTime(a.GetLeaseExpiresAt()), Timeout: FromDuration(a.GetTimeout()),
		CreatedAt: FromTime(a.GetCreatedAt()), RetryPolicy: FromRetryPolicy(a.GetRetryPolicy()),
		Checkpoint: FromPayload(a.GetCheckpoint()), ResumeData: FromPayload(a.GetResumeData()),
	}
}

// RetryPolicy is a job's or a kind's backoff as the API carries it; nil for none.
func RetryPolicy(p *hoppertype.RetryPolicy) *hopperv1.RetryPolicy {
	if p == nil {
		return nil
	}
	return &hopperv1.RetryPolicy{Base: Duration(p.Base), Multiplier: p.Multiplier, Cap: Duration(p.Cap), Jitter: p.Jitter,
		RetryBusinessErrors: p.RetryBusinessErrors}
}

// FromRetryPolicy reads a backoff: nil for none.
func FromRetryPolicy(p *hopperv1.RetryPolicy) *hoppertype.RetryPolicy {
	if p == nil {
		return nil
	}
	return &hoppertype.RetryPolicy{Base: FromDuration(p.GetBase()), Multiplier: p.GetMultiplier(),
		Cap: FromDuration(p.GetCap()), Jitter: p.GetJitter(), RetryBusinessErrors: p.GetRetryBusinessErrors()}
}
