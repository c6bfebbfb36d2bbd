//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// maxRescues is the bound on rescues the suite gives its jobs, so that killing workers every
// few seconds never legitimately dead-letters a job as worker_lost (the default bound is 3).
// The verification still accepts a job that failed with outcome worker_lost after recorded
// losses (explainedLoss), should one be unlucky twenty times.
const maxRescues = 20

// jobSpec is a chaos job for the API.
func jobSpec(args Args) *hopperv1.JobSpec {
	b, _ := json.Marshal(args)
	spec := &hopperv1.JobSpec{Kind: Kind, Args: string(b), MaxAttempts: 5,
		RetryPolicy: &hopperv1.RetryPolicy{Base: durationpb.New(200 * time.Millisecond), Cap: durationpb.New(2 * time.Second)}}
	spec.MaxRescues = maxRescues
	return spec
}

// quickJob works 50–450 ms: long enough that a killed worker always holds some.
func quickJob() *hopperv1.JobSpec {
	return jobSpec(Args{SleepMS: 50 + rand.N(400)})
}

// enqueuer enqueues batches through the API and keeps every acknowledged job id: a job the
// server said it stored must never be lost. Calls that fail are counted by Connect code.
type enqueuer struct {
	mu       sync.Mutex
	acked    []string
	errs     map[string]int
	firstErr map[string]string // code → the first message with it
	slowest  time.Duration     // the longest failed call
	ackTimes []time.Time       // when each acknowledged batch was
	slow     atomic.Int64      // when set, the interval between batches instead of run's
}

func newEnqueuer() *enqueuer {
	return &enqueuer{errs: map[string]int{}, firstErr: map[string]string{}}
}

// enqueueOnce sends one batch through a; it returns the ids the server acknowledged.
func (e *enqueuer) enqueueOnce(ctx context.Context, a *api, specs []*hopperv1.JobSpec) ([]string, error) {
	res, err := call(ctx, e, func(ctx context.Context) (*hopperv1.EnqueueBatchResponse, error) {
		return a.jobs.EnqueueBatch(ctx, &hopperv1.EnqueueBatchRequest{Jobs: specs})
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.GetResults()))
	for i, r := range res.GetResults() {
		ids[i] = r.GetJob().GetId()
	}
	e.ack(ids)
	return ids, nil
}

// call makes one enqueue call within callTimeout and counts its failure by Connect code
// ("timeout" when no answer came in time); a call cut short because ctx ended is not counted.
func call[R any](ctx context.Context, e *enqueuer, send func(context.Context) (R, error)) (R, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	res, err := send(cctx)
	if err != nil && ctx.Err() == nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		code := connect.CodeOf(err).String()
		if cctx.Err() != nil {
			code = "timeout" // no answer within callTimeout
		}
		e.errs[code]++
		if _, ok := e.firstErr[code]; !ok {
			e.firstErr[code] = err.Error()
		}
		e.slowest = max(e.slowest, time.Since(start))
	}
	return res, err
}

// ack records job ids the server acknowledged, in one answer.
func (e *enqueuer) ack(ids []string) {
	e.mu.Lock()
	e.acked = append(e.acked, ids...)
	e.ackTimes = append(e.ackTimes, time.Now())
	e.mu.Unlock()
}

// run enqueues a batch of size jobs from next every interval (0: back to back; slow overrides
// it while set), through the
// servers apis returns (one after the other), until ctx ends.
func (e *enqueuer) run(ctx context.Context, apis func() []*api, size int, interval time.Duration,
	next func() *hopperv1.JobSpec) {
	e.loop(ctx, apis, interval, func(ctx context.Context, a *api) error {
		specs := make([]*hopperv1.JobSpec, size)
		for j := range specs {
			specs[j] = next()
		}
		_, err := e.enqueueOnce(ctx, a, specs)
		return err
	})
}

// loop calls send every interval (0: back to back; slow overrides it while set), with the
// servers apis returns (one after the other), until ctx ends.
func (e *enqueuer) loop(ctx context.Context, apis func() []*api, interval time.Duration,
	send func(context.Context, *api) error) {
	for i := 0; ctx.Err() == nil; i++ {
		start := time.Now()
		as := apis()
		if len(as) > 0 {
			err := send(ctx, as[i%len(as)])
			if err != nil && interval == 0 {
				sleepCtx(ctx, 50*time.Millisecond) // don't spin on a server that is down
			}
		}
		wait := interval
		if slow := time.Duration(e.slow.Load()); slow > 0 {
			wait = slow
		}
		if d := wait - time.Since(start); d > 0 { // real time: load paced as a client would send it
			sleepCtx(ctx, d)
		}
	}
}

// start runs run in a goroutine; the returned function stops it and waits.
func (e *enqueuer) start(ctx context.Context, apis func() []*api, size int, interval time.Duration,
	next func() *hopperv1.JobSpec) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.run(ctx, apis, size, interval, next) }()
	return func() { cancel(); <-done }
}

// firstAckAfter is when the first batch after t was acknowledged, or zero.
func (e *enqueuer) firstAckAfter(t time.Time) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, at := range e.ackTimes {
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

func (e *enqueuer) ids() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.acked...)
}

// errorSummary says which errors the enqueues met, e.g. "unavailable ×3, internal ×1".
func (e *enqueuer) errorSummary() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var parts []string
	for code, n := range e.errs {
		parts = append(parts, fmt.Sprintf("%s ×%d", code, n))
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
