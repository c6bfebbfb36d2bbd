package server

import (
	"encoding/json"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func dur(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// fromDur reads an optional duration; nil is 0.
func fromDur(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

func (s *Server) toJob(j *hopper.JobRow) *hopperv1.Job {
	return &hopperv1.Job{
		Stalled: j.Stalled(time.Now(), s.cfg.StalledAfter), Checkpoint: string(j.Checkpoint), DeadlineAt: ts(j.DeadlineAt),
		ResumeData: string(j.ResumeData),
		Id:         j.ID, Kind: j.Kind, Queue: j.Queue, Priority: int32(j.Priority), Args: string(j.Args),
		Headers: j.Headers, State: string(j.State), Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts),
		LeaseToken: j.Token, RunAt: ts(j.RunAt), Timeout: dur(j.Timeout), WorkerId: j.WorkerID,
		LeaseExpiresAt: ts(j.LeaseExpiresAt), HeartbeatAt: ts(j.HeartbeatAt),
		ProgressPercent: int32(j.ProgressPercent), ProgressMessage: j.ProgressMessage,
		Result: string(j.Result), LastError: j.LastError, IdempotencyKey: j.IdempotencyKey,
		GroupKey: j.GroupKey, OriginalId: j.OriginalID, ReplayCount: int32(j.ReplayCount),
		CreatedAt: ts(j.CreatedAt), StartedAt: ts(j.StartedAt), FinishedAt: ts(j.FinishedAt),
		UpdatedAt: ts(j.UpdatedAt), ExpiresAt: ts(j.ExpiresAt),
		Rescues: int32(j.Rescues), MaxRescues: int32(j.MaxRescues),
	}
}

// toActivated is what a worker gets for a claimed job; fields, when not empty, keeps only
// those top-level fields of an object payload.
func toActivated(j *hopper.JobRow, fields []string) *hopperv1.ActivatedJob {
	return &hopperv1.ActivatedJob{
		Id: j.ID, Kind: j.Kind, Queue: j.Queue, Args: string(pickFields(j.Args, fields)), Headers: j.Headers,
		Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts), LeaseToken: j.Token,
		LeaseExpiresAt: ts(j.LeaseExpiresAt), Timeout: dur(j.Timeout), CreatedAt: ts(j.CreatedAt),
		RetryPolicy: toPolicy(j.RetryPolicy), Checkpoint: string(j.Checkpoint), ResumeData: string(j.ResumeData),
	}
}

func toPolicy(p *hopper.RetryPolicy) *hopperv1.RetryPolicy {
	if p == nil {
		return nil
	}
	return &hopperv1.RetryPolicy{Base: dur(p.Base), Multiplier: p.Multiplier, Cap: dur(p.Cap), Jitter: p.Jitter}
}

func pickFields(args json.RawMessage, fields []string) json.RawMessage {
	if len(fields) == 0 {
		return args
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(args, &all); err != nil {
		return args // not an object: nothing to pick from
	}
	picked := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		if v, ok := all[f]; ok {
			picked[f] = v
		}
	}
	out, err := json.Marshal(picked)
	if err != nil {
		return args
	}
	return out
}

func toEvent(e *hopper.Event) *hopperv1.Event {
	return &hopperv1.Event{Seq: e.Seq, At: ts(e.At), From: string(e.From), To: string(e.To),
		Actor: string(e.Actor), Reason: e.Reason}
}

func toAttempt(a *hopper.AttemptRecord) *hopperv1.Attempt {
	return &hopperv1.Attempt{LeaseToken: a.Token, Attempt: int32(a.Attempt), WorkerId: a.WorkerID,
		StartedAt: ts(a.StartedAt), EndedAt: ts(a.EndedAt), Outcome: string(a.Outcome), Error: a.Error, Stack: a.Stack}
}
