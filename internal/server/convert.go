package server

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// fromDur and fromPolicy read a request's optional duration (nil is 0) and backoff, under
// the names the worker service calls.
var (
	fromDur    = apiview.FromDuration
	fromPolicy = apiview.FromRetryPolicy
)

// toJob is j as the API shows it, stalled by the server's clock and threshold.
func (s *Server) toJob(j *hopper.JobRow) *hopperv1.Job {
	return apiview.Job(j, j.Stalled(s.client.Now(), s.cfg.StalledAfter))
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
	a := apiview.ActivatedJob(j, defaultTimeout)
	if len(fields) > 0 {
		a.Args = string(pickFields(j.Args, fields))
	}
	return a
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
