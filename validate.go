package hopper

import (
	"encoding/json"
	"fmt"
	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"math"
	"time"
	"unicode/utf8"
)

// Input limits, documented in docs/jobs.md.
const (
	maxKindLen     = field.MaxKindLen
	maxKeyLen      = 512
	maxPriority    = 1000
	maxAttemptsCap = engine.MaxAttemptsCap
	maxRescuesCap  = 1000
	maxTimeout     = 30 * 24 * time.Hour
	maxRetention   = 90 * 24 * time.Hour
	maxResultTTL   = MaxRunAtFuture
	maxHeaderBytes = 64 << 10
	maxIDLen       = 255
	maxNameLen     = field.MaxFilterLen
	maxCap         = math.MaxInt32 // a fleet-wide cap: the stores keep it in 32 bits
)

// Limits of free text about a job, in bytes: longer text is refused with a *ValidationError
// naming the field. The Go remote worker cuts the text it reports to fit, so that no report of
// its is refused for its length.
const (
	// MaxReasonBytes bounds a reason: of a release, a cancel, a resume.
	MaxReasonBytes = field.MaxReasonBytes
	// MaxProgressMessageBytes bounds a progress message (ReportJobProgress).
	MaxProgressMessageBytes = field.MaxProgressMessageBytes
	// MaxErrorBytes bounds the error text of an attempt a remote worker failed (FailJob).
	MaxErrorBytes = field.MaxErrorBytes
)

// Text from outside (every string a Client method takes, every JSON payload) must be valid
// UTF-8 without NUL bytes: PostgreSQL's text refuses both, SQLite would keep them, and a job
// holding them could be neither shown through the API (protobuf strings are UTF-8) nor handed
// to a remote worker. These checks run at the library's API boundary, so the Go API, the RPC
// API, the async endpoints and the CLI refuse the same input with the same error.

// checkText refuses a string that is not valid UTF-8 or holds a NUL byte (field.Text).
func checkText(name, s string) error { return field.Text(name, s) }

// badText returns the offset of the first byte that makes s unusable as text, or -1.
func badText(s string) int { return field.BadText(s) }

// checkLimited is checkText with a length limit.
func checkLimited(name, s string, limit int) error { return field.Limited(name, s, limit) }

// checkPageLimit checks a listing's page size (field "limit"): 0 for the default (100), at
// most store.MaxPageLimit.
func checkPageLimit(limit int) error {
	if limit < 0 || limit > store.MaxPageLimit {
		return invalid("limit", "%d is outside 0–%d", limit, store.MaxPageLimit)
	}
	return nil
}

// checkChange checks what a caller says about a change to job id: the id, who made it and why,
// as the job's history records them.
func checkChange(id string, actor Actor, reason string) error {
	if err := checkID("id", id); err != nil {
		return err
	}
	if err := checkLimited("reason", reason, MaxReasonBytes); err != nil {
		return err
	}
	return checkActor(actor)
}

// checkActor checks who a caller says made a change, for the audit trail.
func checkActor(a Actor) error {
	if !a.Valid() {
		return invalid("actor", "%q is not one of api, operator, worker, leader, server", a)
	}
	return nil
}

// checkID checks a job id: required, at most 255 bytes of text.
func checkID(field, id string) error {
	if id == "" {
		return invalid(field, "is required")
	}
	return checkLimited(field, id, maxIDLen)
}

// checkTexts checks each string of a list (a filter), naming the item: kinds[2].
func checkTexts(field string, ss []string) error {
	for i, s := range ss {
		if err := checkLimited(fmt.Sprintf("%s[%d]", field, i), s, maxNameLen); err != nil {
			return err
		}
	}
	return nil
}

// checkFilter checks the text of a list filter and its cursor.
func checkFilter(queues, kinds []string, cursor string) error {
	if err := checkTexts("queues", queues); err != nil {
		return err
	}
	if err := checkTexts("kinds", kinds); err != nil {
		return err
	}
	return checkLimited("cursor", cursor, maxNameLen)
}

// checkJSON refuses a payload that is not one JSON value in valid UTF-8 (json.Valid lets
// bytes that are not UTF-8 through inside strings; no store or wire can keep them).
func checkJSON(field string, b []byte) error {
	if !json.Valid(b) {
		return invalid(field, "not valid JSON")
	}
	if !utf8.Valid(b) { // JSON holds no raw NUL: json.Valid refused it
		return invalid(field, "not valid UTF-8 at byte %d", badText(string(b)))
	}
	return nil
}

func checkKind(kind string) error { return field.Kind(kind) }

// maxFilterCodes bounds the error codes one listing filters by.
const maxFilterCodes = 100

// InputLimits are the bounds this client puts on what it is given, through every door: the
// limits above, Config.MaxArgsBytes, and the worker protocol's. A server serves them to its
// clients and workers (ServerInfo.InputLimits); TestEveryLimitIsServed holds that each limit
// of this file is among them.
func (c *Client) InputLimits() InputLimits {
	return InputLimits{
		MaxIDLen: maxIDLen, MaxKindLen: maxKindLen, MaxQueueLen: field.MaxQueueLen, MaxKeyLen: maxKeyLen,
		MaxNameLen: maxNameLen, MaxErrorCodeLen: field.MaxErrorCodeLen,
		MaxReasonBytes: MaxReasonBytes, MaxProgressMessageBytes: MaxProgressMessageBytes, MaxErrorBytes: MaxErrorBytes,
		MaxArgsBytes: c.cfg.MaxArgsBytes, MaxHeaderBytes: maxHeaderBytes,
		MaxPriority: maxPriority, MaxAttempts: maxAttemptsCap, MaxRescues: maxRescuesCap, MaxCap: maxCap,
		MaxFilterCodes: maxFilterCodes,
		MaxRunAtPast:   MaxRunAtPast, MaxRunAtFuture: MaxRunAtFuture, MaxTimeout: maxTimeout,
		MaxRetention: maxRetention, MaxResultTTL: maxResultTTL,
		MaxActivateJobs: workerapi.MaxActivateJobs, MaxActivateWait: workerapi.MaxActivateWait,
		MaxActivateQueues: workerapi.MaxActivateQueues, MaxStreamCredit: workerapi.MaxStreamCredit,
		MaxStreamKindCaps: workerapi.MaxStreamKindCaps, MaxParents: MaxParents,
		MaxSpawn:         MaxSpawn,
		MaxWorkflowSteps: MaxWorkflowSteps,
	}
}

// checkErrorCodes checks the business error codes a listing filters by (field.ErrorCode).
func checkErrorCodes(codes []string) error {
	if len(codes) > maxFilterCodes {
		return invalid("error_codes", "%d codes, more than %d", len(codes), maxFilterCodes)
	}
	for _, code := range codes {
		if err := field.ErrorCode("error_codes", code); err != nil {
			return err
		}
	}
	return nil
}

// checkFairnessKeys checks the fairness keys a listing filters by (field.FairnessKey, not empty).
func checkFairnessKeys(keys []string) error {
	if len(keys) > maxFilterCodes {
		return invalid("fairness_keys", "%d keys, more than %d", len(keys), maxFilterCodes)
	}
	for _, k := range keys {
		if k == "" {
			return invalid("fairness_keys", "an empty key")
		}
		if err := field.FairnessKey("fairness_keys", k); err != nil {
			return err
		}
	}
	return nil
}

// checkMaxRunning checks a fleet-wide cap: 0 (none) up to maxCap.
func checkMaxRunning(n int) error { return checkMaxRunningField("max_running", n) }

// checkMaxRunningField checks a cap, of the field name: 0 (none) to maxCap.
func checkMaxRunningField(name string, n int) error {
	if n < 0 || n > maxCap {
		return invalid(name, "%d is outside 0–%d (0 removes the cap)", n, maxCap)
	}
	return nil
}

// checkQueues checks the queues a remote worker asks for (field.Queues).
func checkQueues(queue string, queues []string) error {
	return field.Queues(queue, queues, workerapi.MaxActivateQueues)
}

func checkQueueName(q string) error { return field.Queue("queue", q) }

func checkPolicy(field string, p *RetryPolicy) error {
	switch {
	case p == nil:
		return nil
	case p.Base < 0, p.Cap < 0:
		return invalid(field, "base and cap must not be negative")
	case p.Multiplier != 0 && (p.Multiplier < 1 || math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0)):
		return invalid(field, "multiplier %v must be at least 1", p.Multiplier)
	case p.Jitter > 1 || math.IsNaN(p.Jitter):
		return invalid(field, "jitter %v must be at most 1 (negative disables jitter)", p.Jitter)
	}
	return nil
}

// checkInsert validates an insert before anything is stored.
func checkInsert(p *store.InsertParams, o InsertOpts, now time.Time) error {
	if err := checkKind(p.Kind); err != nil {
		return err
	}
	if err := checkQueueName(p.Queue); err != nil {
		return err
	}
	switch {
	case p.Priority < -maxPriority || p.Priority > maxPriority:
		return invalid("priority", "%d is outside -%d–%d", p.Priority, maxPriority, maxPriority)
	case p.MaxAttempts < 1 || p.MaxAttempts > maxAttemptsCap:
		return invalid("max_attempts", "%d is outside 1–%d", p.MaxAttempts, maxAttemptsCap)
	case p.Timeout < 0 || p.Timeout > maxTimeout:
		return invalid("timeout", "%s is outside 0–%s", p.Timeout, maxTimeout)
	case p.IdempotencyTTL < 0 || p.IdempotencyTTL > maxRetention:
		return invalid("idempotency_retention", "%s is outside 0–%s", p.IdempotencyTTL, maxRetention)
	case p.ResultTTL < 0 || p.ResultTTL > maxResultTTL:
		return invalid("result_ttl", "%s is outside 0–%s", p.ResultTTL, maxResultTTL)
	}
	if err := checkLimited("idempotency_key", p.IdempotencyKey, maxKeyLen); err != nil {
		return err
	}
	if err := checkLimited("group_key", p.GroupKey, maxKeyLen); err != nil {
		return err
	}
	if err := field.FairnessKey("fairness_key", p.FairnessKey); err != nil {
		return err
	}
	if err := checkMerge(p.MergeKey, p.Merge); err != nil {
		return err
	}
	if err := checkAfter(p); err != nil {
		return err
	}
	if err := checkMaxRescues("max_rescues", p.MaxRescues); err != nil {
		return err
	}
	if err := checkRunAt(o, now); err != nil {
		return err
	}
	if err := checkHeaders(p.Headers); err != nil {
		return err
	}
	return checkPolicy("retry_policy", p.RetryPolicy)
}

// checkMaxRescues allows a bound of 1–maxRescuesCap, UnlimitedRescues, and 0 (the default).
func checkMaxRescues(field string, n int) error {
	if n < UnlimitedRescues || n > maxRescuesCap {
		return invalid(field, "%d is outside 1–%d (0 takes the default, -1 is unbounded)", n, maxRescuesCap)
	}
	return nil
}

func checkRunAt(o InsertOpts, now time.Time) error {
	switch {
	case !o.RunAt.IsZero() && o.Delay != 0:
		return invalid("run_at", "set run_at or delay, not both")
	case o.Delay < 0 || o.Delay > MaxRunAtFuture:
		return invalid("delay", "%s is outside 0–%s", o.Delay, MaxRunAtFuture)
	case o.RunAt.IsZero():
		return nil
	case o.RunAt.Before(now.Add(-MaxRunAtPast)):
		return invalid("run_at", "%s is more than %s in the past", o.RunAt.Format(time.RFC3339), MaxRunAtPast)
	case o.RunAt.After(now.Add(MaxRunAtFuture)):
		return invalid("run_at", "%s is more than %s ahead", o.RunAt.Format(time.RFC3339), MaxRunAtFuture)
	}
	return nil
}

func checkHeaders(h map[string]string) error {
	size := 0
	for k, v := range h {
		if k == "" {
			return invalid("headers", "a header name is empty")
		}
		if why := field.TextProblem(k); why != "" {
			return invalid("headers", "the name %q: %s", k, why)
		}
		if why := field.TextProblem(v); why != "" {
			return invalid("headers", "the value of %q: %s", k, why)
		}
		size += len(k) + len(v)
	}
	if size > maxHeaderBytes {
		return invalid("headers", "%d bytes exceed the limit of %d", size, maxHeaderBytes)
	}
	return nil
}

// checkAfter checks a job's parents and its policy on their failure (docs/workflows.md).
func checkAfter(p *store.InsertParams) error {
	if len(p.After) == 0 {
		// A policy without parents (a kind's default, say, for the jobs of it that have some)
		// has nothing to apply to: checked, then dropped.
		if _, err := ParseParentPolicy(string(p.OnParentFailure)); err != nil {
			return invalid("on_parent_failure", "%v", err)
		}
		p.OnParentFailure = ""
		return nil
	}
	if p.MergeKey != "" {
		return invalid("after", "a job with parents cannot have a merge_key")
	}
	if len(p.After) > MaxParents {
		return invalid("after", "%d parents, at most %d", len(p.After), MaxParents)
	}
	for i, id := range p.After {
		if id == "" {
			return invalid(fmt.Sprintf("after[%d]", i), "is empty")
		}
		if err := field.Limited(fmt.Sprintf("after[%d]", i), id, maxIDLen); err != nil {
			return err
		}
	}
	if _, err := ParseParentPolicy(string(p.OnParentFailure)); err != nil {
		return invalid("on_parent_failure", "%v", err)
	}
	return nil
}
