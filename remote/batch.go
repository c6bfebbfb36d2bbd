package remote

import (
	"context"
	"sync"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
)

// Outcomes go to the server in batches (WorkerService.Report), each item still fenced by its
// own lease token and answered with its own verdict. There is no timer and no goroutine of
// its own: the first outcome to find a free request slot sends what is waiting, and keeps
// sending while more arrived meanwhile; other outcomes wait for the batch they join. At a
// low rate every outcome goes out at once, alone; under load the batches grow by themselves
// while earlier requests are on the wire.

const (
	// maxBatch is the most outcomes in one request (the server takes 1000 items).
	maxBatch = 500
	// batchSlots is how many batch requests may be on the wire at once.
	batchSlots = 2
	// batchTimeout bounds one batch request.
	batchTimeout = 20 * time.Second
)

// batcher coalesces outcomes into Report requests.
type batcher struct {
	api hopperv1connect.WorkerServiceClient

	mu      sync.Mutex
	waiting []*queued
	sending int // requests on the wire
}

type queued struct {
	outcome *hopperv1.Outcome
	done    chan error // buffered 1: the item's verdict, as the single call's error
}

// send reports o and returns what the single call (Complete, Fail…) would have returned: nil,
// a *connect.Error with the item's verdict, or the error of the whole request (the server
// unreachable), which the caller retries.
func (b *batcher) send(ctx context.Context, o *hopperv1.Outcome) error {
	q := &queued{outcome: o, done: make(chan error, 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, q)
	flush := b.sending < batchSlots
	if flush {
		b.sending++
	}
	b.mu.Unlock()
	if flush {
		b.flush()
	}
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush sends the waiting outcomes, batch after batch, until none is left, then frees its
// request slot.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		n := min(len(b.waiting), maxBatch)
		if n == 0 {
			b.sending--
			b.mu.Unlock()
			return
		}
		batch := b.waiting[:n:n]
		b.waiting = b.waiting[n:]
		b.mu.Unlock()
		b.report(batch)
	}
}

// report sends one batch and hands each item its verdict.
func (b *batcher) report(batch []*queued) {
	req := &hopperv1.ReportRequest{Outcomes: make([]*hopperv1.Outcome, len(batch))}
	for i, q := range batch {
		req.Outcomes[i] = q.outcome
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	res, err := b.api.Report(ctx, req)
	if err == nil && len(res.GetOutcomes()) != len(batch) {
		err = connect.NewError(connect.CodeInternal, "report: the server answered a different number of verdicts")
	}
	for i, q := range batch {
		if err != nil {
			q.done <- err
			continue
		}
		q.done <- verdictErr(res.GetOutcomes()[i])
	}
}

// verdictErr is a verdict as the error the single call would have returned.
func verdictErr(v *hopperv1.Verdict) error {
	if v.GetCode() == "ok" {
		return nil
	}
	var code connect.Code
	if err := code.UnmarshalText([]byte(v.GetCode())); err != nil {
		code = connect.CodeUnknown
	}
	return connect.NewError(code, v.GetMessage())
}
