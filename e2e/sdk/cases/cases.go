// Package cases holds the handler behaviours of the SDK conformance suite (e2e/sdk) in Go:
// what the in-process engine runs to set the expected outcome of each case, and what the Go
// remote worker's driver runs. Every SDK's driver implements the same cases; docs/development.md
// ("The SDK conformance suite") describes them.
package cases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper"
)

// Kind is the kind every driver handles.
const Kind = "conformance"

// Args are a conformance job's arguments: the case to run and its numbers.
type Args struct {
	Case string `json:"case"`
	// Ms is how long the case works (sleep, progress, shorten), in milliseconds.
	Ms int `json:"ms,omitempty"`
	// Every is how often the progress case reports, in milliseconds.
	Every int `json:"every,omitempty"`
	// LeaseMs is the lease the shorten case sets, in milliseconds.
	LeaseMs int `json:"lease_ms,omitempty"`
	// N is the result of the value case.
	N int `json:"n,omitempty"`
}

func (Args) Kind() string { return Kind }

// Handler runs one case. Begin and end, when set, hear each call's start and end (the driver
// prints them, for the harness to count the handlers running at once).
type Handler struct {
	hopper.WorkerDefaults[Args]
	Begin, End func(id string, attempt int)
}

// Work runs the case its job names.
func (h Handler) Work(ctx context.Context, job *hopper.Job[Args]) (err error) {
	if h.Begin != nil {
		h.Begin(job.ID, job.Attempt)
	}
	if h.End != nil {
		defer h.End(job.ID, job.Attempt)
	}
	a := job.Args
	switch a.Case {
	case "ok":
		return hopper.SetResult(ctx, "done")
	case "error":
		return errors.New("boom")
	case "panic":
		panic("boom")
	case "timeout", "wait-cancel":
		<-ctx.Done()
		return ctx.Err()
	case "no-retry":
		return hopper.NoRetry(errors.New("bad input"))
	case "retry-after":
		return hopper.RetryAfter(2*time.Hour, errors.New("busy"))
	case "business":
		return hopper.BusinessError{Code: "card_declined", Message: "insufficient funds"}
	case "fail-checkpoint":
		return hopper.FailWithCheckpoint(errors.New("part 4 failed"), map[string]int{"done": 3})
	case "snooze":
		return hopper.Snooze(time.Hour)
	case "suspend":
		return hopper.Suspend(map[string]int{"page": 7}, hopper.SuspendOpts{})
	case "sleep":
		if err := sleep(ctx, a.Ms); err != nil {
			return err
		}
		return hopper.SetResult(ctx, "done")
	case "progress":
		start := time.Now()
		for i := 1; time.Since(start) < time.Duration(a.Ms)*time.Millisecond; i++ {
			pct := int(time.Since(start) * 100 / (time.Duration(a.Ms) * time.Millisecond))
			if err := hopper.ReportProgress(ctx, pct, fmt.Sprintf("step %d", i)); err != nil {
				return err
			}
			if err := sleep(ctx, a.Every); err != nil {
				return err
			}
		}
		if err := hopper.ReportProgress(ctx, 100, "all steps"); err != nil {
			return err
		}
		return hopper.SetResult(ctx, "done")
	case "value":
		return hopper.SetResult(ctx, a.N)
	case "sum-parents":
		parents, err := hopper.ParentResults(ctx)
		if err != nil {
			return err
		}
		return hopper.SetResult(ctx, SumParents(parents))
	case "spawn":
		// N value jobs 1…N in its queue, each keyed by this job and its place, spawned twice
		// (as a retried attempt would): the second spawn must return the first's jobs.
		jobs := make([]hopper.SpawnParams, a.N)
		for i := range jobs {
			jobs[i] = hopper.SpawnParams{Args: Args{Case: "value", N: i + 1},
				Opts: &hopper.InsertOpts{Queue: job.Queue, IdempotencyKey: fmt.Sprintf("%s-%d", job.ID, i)}}
		}
		first, err := hopper.SpawnMany(ctx, jobs)
		if err != nil {
			return err
		}
		again, err := hopper.SpawnMany(ctx, jobs)
		if err != nil {
			return err
		}
		for i := range first {
			if first[i].Existing || !again[i].Existing || again[i].Job.ID != first[i].Job.ID {
				return hopper.NoRetry(fmt.Errorf("spawn %d: not idempotent", i))
			}
		}
		return hopper.SetResult(ctx, "spawned")
	case "shorten":
		if err := hopper.ExtendLease(ctx, time.Duration(a.LeaseMs)*time.Millisecond); err != nil {
			return err
		}
		if err := sleep(ctx, a.Ms); err != nil {
			return err
		}
		return hopper.SetResult(ctx, "done")
	}
	return hopper.NoRetry(fmt.Errorf("unknown case %q", a.Case))
}

// ParentSeen is a parent as the sum-parents case reports it: every SDK the same fields.
type ParentSeen struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Outcome  string          `json:"outcome"`
	State    string          `json:"state"`
	Error    string          `json:"error"`
	Result   json.RawMessage `json:"result"` // null for none
	Expired  bool            `json:"expired"`
	Finished bool            `json:"finished"` // it has a finish time
}

// Summed is the sum-parents case's result: the sum of its parents' results that are numbers,
// and its parents in the order it read them.
type Summed struct {
	Sum     float64      `json:"sum"`
	Parents []ParentSeen `json:"parents"`
}

// SumParents is what the sum-parents case stores for parents.
func SumParents(parents []hopper.ParentResult) Summed {
	out := Summed{Parents: []ParentSeen{}}
	for _, p := range parents {
		var n float64
		if json.Unmarshal(p.Result, &n) == nil {
			out.Sum += n
		}
		out.Parents = append(out.Parents, ParentSeen{ID: p.ID, Kind: p.Kind, Outcome: string(p.Outcome),
			State: string(p.State), Error: p.Error, Result: p.Result, Expired: p.Expired, Finished: !p.FinishedAt.IsZero()})
	}
	return out
}

func sleep(ctx context.Context, ms int) error {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
