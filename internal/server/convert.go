package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// Reads show what is stored, but protobuf strings must be UTF-8: a value stored before Hopper
// validated its input (or written to the database directly) would fail the whole answer. The
// view shows U+FFFD for each bad byte sequence; the stored row is never rewritten.

// text is a stored string as the API shows it.
func text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// textBytes is a stored payload (JSON) as the API shows it.
func textBytes(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func textMap(m map[string]string) map[string]string {
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			out := make(map[string]string, len(m))
			for k, v := range m {
				out[text(k)] = text(v)
			}
			return out
		}
	}
	return m
}

func (s *Server) toJob(j *hopper.JobRow) *hopperv1.Job {
	return &hopperv1.Job{
		Stalled: j.Stalled(s.client.Now(), s.cfg.StalledAfter), Checkpoint: textBytes(j.Checkpoint), DeadlineAt: ts(j.DeadlineAt),
		ResumeData: textBytes(j.ResumeData),
		Id:         text(j.ID), Kind: text(j.Kind), Queue: text(j.Queue), Priority: int32(j.Priority), Args: textBytes(j.Args),
		Headers: textMap(j.Headers), State: string(j.State), Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts),
		LeaseToken: j.Token, RunAt: ts(j.RunAt), Timeout: dur(j.Timeout), WorkerId: text(j.WorkerID),
		LeaseExpiresAt: ts(j.LeaseExpiresAt), HeartbeatAt: ts(j.HeartbeatAt),
		ProgressPercent: int32(j.ProgressPercent), ProgressMessage: text(j.ProgressMessage),
		Result: textBytes(j.Result), LastError: text(j.LastError), IdempotencyKey: text(j.IdempotencyKey),
		GroupKey: text(j.GroupKey), OriginalId: text(j.OriginalID), ReplayCount: int32(j.ReplayCount),
		CreatedAt: ts(j.CreatedAt), StartedAt: ts(j.StartedAt), FinishedAt: ts(j.FinishedAt),
		UpdatedAt: ts(j.UpdatedAt), ExpiresAt: ts(j.ExpiresAt),
		Rescues: int32(j.Rescues), MaxRescues: int32(j.MaxRescues),
	}
}

// undeliverable says why a claimed job cannot be sent to a remote worker, "" when it can. A
// worker needs the job's values exactly (a U+FFFD in its args would change its work), and one
// value protobuf cannot carry would fail the whole answer, good jobs included.
func undeliverable(j *hopper.JobRow) string {
	for _, f := range []struct {
		what  string
		valid bool
	}{
		{"args are", utf8.Valid(j.Args)}, {"the kind is", utf8.ValidString(j.Kind)},
		{"the queue is", utf8.ValidString(j.Queue)}, {"the id is", utf8.ValidString(j.ID)},
		{"the checkpoint is", utf8.Valid(j.Checkpoint)}, {"the resume data is", utf8.Valid(j.ResumeData)},
	} {
		if !f.valid {
			return f.what + " not valid UTF-8"
		}
	}
	for k, v := range j.Headers {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Sprintf("the header %q is not valid UTF-8", k)
		}
	}
	return ""
}

// toActivated is what a worker gets for a claimed job; fields, when not empty, keeps only
// those top-level fields of an object payload.
func toActivated(j *hopper.JobRow, fields []string, defaultTimeout time.Duration) *hopperv1.ActivatedJob {
	return &hopperv1.ActivatedJob{DefaultTimeout: dur(defaultTimeout),
		Id: j.ID, Kind: j.Kind, Queue: j.Queue, Args: string(pickFields(j.Args, fields)), Headers: j.Headers,
		Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts), LeaseToken: j.Token,
		LeaseExpiresAt: ts(j.LeaseExpiresAt), Timeout: dur(j.Timeout), CreatedAt: ts(j.CreatedAt),
		RetryPolicy: toPolicy(j.RetryPolicy), Checkpoint: string(j.Checkpoint), ResumeData: string(j.ResumeData),
	}
}

func fromPolicy(p *hopperv1.RetryPolicy) *hopper.RetryPolicy {
	if p == nil {
		return nil
	}
	return &hopper.RetryPolicy{Base: fromDur(p.GetBase()), Multiplier: p.GetMultiplier(),
		Cap: fromDur(p.GetCap()), Jitter: p.GetJitter()}
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
		Actor: string(e.Actor), Reason: text(e.Reason)}
}

func toAttempt(a *hopper.AttemptRecord) *hopperv1.Attempt {
	return &hopperv1.Attempt{LeaseToken: a.Token, Attempt: int32(a.Attempt), WorkerId: text(a.WorkerID),
		StartedAt: ts(a.StartedAt), EndedAt: ts(a.EndedAt), Outcome: string(a.Outcome), Error: text(a.Error),
		Stack: text(a.Stack)}
}
