package hopper

import (
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/hopperjobs/hopper/internal/store"
)

// Input limits, documented in docs/jobs.md.
const (
	maxKindLen     = 255
	maxQueueLen    = 128
	maxKeyLen      = 512
	maxPriority    = 1000
	maxAttemptsCap = 1000
	maxRescuesCap  = 1000
	maxTimeout     = 30 * 24 * time.Hour
	maxRetention   = 90 * 24 * time.Hour
	maxResultTTL   = MaxRunAtFuture
	maxHeaderBytes = 64 << 10
)

func checkKind(kind string) error {
	switch {
	case kind == "":
		return invalid("kind", "is empty")
	case len(kind) > maxKindLen:
		return invalid("kind", "is %d bytes, more than %d", len(kind), maxKindLen)
	case strings.IndexFunc(kind, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return invalid("kind", "%q contains white space or control characters", kind)
	}
	return nil
}

func checkQueueName(q string) error {
	if q == "" || len(q) > maxQueueLen {
		return invalid("queue", "%q must be 1–%d characters", q, maxQueueLen)
	}
	for _, r := range q {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.:", r))) {
			return invalid("queue", "%q: only letters, digits, '_', '-', '.' and ':' are allowed", q)
		}
	}
	return nil
}

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
	case len(p.IdempotencyKey) > maxKeyLen:
		return invalid("idempotency_key", "is %d bytes, more than %d", len(p.IdempotencyKey), maxKeyLen)
	case p.IdempotencyTTL < 0 || p.IdempotencyTTL > maxRetention:
		return invalid("idempotency_retention", "%s is outside 0–%s", p.IdempotencyTTL, maxRetention)
	case len(p.GroupKey) > maxKeyLen:
		return invalid("group_key", "is %d bytes, more than %d", len(p.GroupKey), maxKeyLen)
	case p.ResultTTL < 0 || p.ResultTTL > maxResultTTL:
		return invalid("result_ttl", "%s is outside 0–%s", p.ResultTTL, maxResultTTL)
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
		size += len(k) + len(v)
	}
	if size > maxHeaderBytes {
		return invalid("headers", "%d bytes exceed the limit of %d", size, maxHeaderBytes)
	}
	return nil
}
