// Package apiview is how Hopper shows its values outside Go: as the messages of its API
// (package hopperv1), built from the rows the hopper package returns. The Connect API, the
// CLI's --json and the async endpoints all show a job through Job, and its JSON through
// package jsoncodec, so a job has one shape wherever it is shown.
//
// A view shows what is stored, but protobuf strings must be UTF-8: a value stored before
// Hopper validated its input (or written to the database by other means) would fail the
// whole answer. A view shows U+FFFD for each bad byte sequence; the stored row is never
// rewritten.
package apiview

import (
	"strings"
	"time"
	"unicode/utf8"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
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
		MergeKey: Text(j.MergeKey),
	}
}

// Event is one state transition of a job as the API shows it.
func Event(e *hoppertype.Event) *hopperv1.Event {
	return &hopperv1.Event{Seq: e.Seq, At: Time(e.At), From: Text(string(e.From)), To: Text(string(e.To)),
		Actor: Text(string(e.Actor)), Reason: Text(e.Reason)}
}

// Attempt is one attempt of a job as the API shows it.
func Attempt(a *hoppertype.AttemptRecord) *hopperv1.Attempt {
	return &hopperv1.Attempt{LeaseToken: a.Token, Attempt: int32(a.Attempt), WorkerId: Text(a.WorkerID),
		StartedAt: Time(a.StartedAt), EndedAt: Time(a.EndedAt), Outcome: Text(string(a.Outcome)),
		Error: Text(a.Error), Stack: Text(a.Stack)}
}

// Time is t as a protobuf timestamp; nil (not set) for the zero time.
func Time(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// Duration is d as a protobuf duration; nil (not set) for 0.
func Duration(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// Text is a stored string as the API shows it.
func Text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// Payload is a stored JSON value (args, a result, a checkpoint) as the API shows it: its text,
// "" for none.
func Payload(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Headers are a job's stored headers as the API shows them.
func Headers(m map[string]string) map[string]string {
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			out := make(map[string]string, len(m))
			for k, v := range m {
				out[Text(k)] = Text(v)
			}
			return out
		}
	}
	return m
}

// Rate is a rate limit as the API and the CLI's JSON write it: N/DURATION ("100/1s"), empty
// for none.
func Rate(r hoppertype.Rate) string {
	if r.IsZero() {
		return ""
	}
	return r.String()
}
