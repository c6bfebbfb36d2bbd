// Package apiview converts between Hopper's plain values (package hoppertype: jobs, their
// events and attempts, retry policies, rates, times) and the messages of its API (package
// hopperv1), both ways; package apispec does the same for the hopper package's own values
// (enqueue options, list filters, queues, kinds, schedules, dead letters), on top of this
// one. The server answers with them, the CLI's --json and the async endpoints show a job
// through Job, the Go client of a server (package hopperclient) reads the answers and writes
// the requests with them, and a remote worker reads the jobs it is handed with this one: a
// field is converted in one place, so a field added to the API is added there once.
//
// The functions named after a message (Job, ActivatedJob…) build that message from Go
// values; those named From… read one. A nil message reads as the zero value: a nil
// timestamp is the zero time, a nil duration 0, an empty payload nil.
//
// A view shows what is stored, but protobuf strings must be UTF-8: a value stored before
// Hopper validated its input (or written to the database by other means) would fail the
// whole answer. An answer shows U+FFFD for each bad byte sequence; the stored row is never
// rewritten.
//
// It imports hoppertype, the field rules, the generated messages and protobuf's well-known
// types: never the hopper package, a store or the engine, so the remote worker links none.
package apiview

import (
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Time is t as a protobuf timestamp; nil (not set) for the zero time.
func Time(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// FromTime reads an optional timestamp: the zero time for nil.
func FromTime(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

// Duration is d as a protobuf duration; nil (not set) for 0.
func Duration(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// FromDuration reads an optional duration: 0 for nil.
func FromDuration(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
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

// FromPayload reads a JSON value of a message: nil for "" (none).
func FromPayload(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
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

// FromRate reads a rate limit the server wrote: empty for none. A value that does not parse
// (a newer server's) reads as none.
func FromRate(text string) hoppertype.Rate {
	if text == "" {
		return hoppertype.Rate{}
	}
	r, _ := field.ParseRate("rate", text)
	return r
}

// OptionalRate is an optional rate limit of a request: nil when r is nil, "0" for no limit.
func OptionalRate(r *hoppertype.Rate) *string {
	if r == nil {
		return nil
	}
	return proto.String(r.String())
}

// FromOptionalRate reads the optional rate limit of a request a caller wrote: nil when it is
// not set, a *hoppertype.ValidationError naming "rate" when it does not parse.
func FromOptionalRate(text *string) (*hoppertype.Rate, error) {
	return FromOptionalRateField("rate", text)
}

// FromOptionalRateField is FromOptionalRate for the field name ("rate_per_key", say).
func FromOptionalRateField(name string, text *string) (*hoppertype.Rate, error) {
	if text == nil {
		return nil, nil
	}
	r, err := field.ParseRate(name, *text)
	return &r, err
}

// OptionalInt is an optional number of a request: nil when n is nil.
func OptionalInt(n *int) *int32 {
	if n == nil {
		return nil
	}
	return proto.Int32(Int32(*n))
}

// Int32 is n as a number of a request. One out of int32's range is held at its bound rather
// than wrapped, so that the server refuses it by name instead of taking another number.
func Int32(n int) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// Counts are job counts per state as the API names the states.
func Counts(counts map[hoppertype.JobState]int64) map[string]int64 {
	out := make(map[string]int64, len(counts))
	for st, n := range counts {
		out[string(st)] = n
	}
	return out
}

// FromCounts reads job counts per state.
func FromCounts(counts map[string]int64) map[hoppertype.JobState]int64 {
	out := make(map[hoppertype.JobState]int64, len(counts))
	for st, n := range counts {
		out[hoppertype.JobState(st)] = n
	}
	return out
}
