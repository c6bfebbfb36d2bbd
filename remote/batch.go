package remote

import (
	"context"
	"slices"
	"sync"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/clock"
)

// Outcomes go to the server in batches, each item still fenced by its own lease token and
// answered with its own verdict. There is no timer: the first outcome to find a free sending
// slot sends what is waiting, and keeps sending while more arrived meanwhile; other outcomes
// wait for the batch they join. At a low rate every outcome goes out at once, alone; under
// load the batches grow by themselves.
//
// A batch goes on the worker's report stream (WorkerService.ReportStream) when the server and
// the HTTP client carry one (HTTP/2): it is sent at once, without waiting for the verdicts of
// the batches before it, which come back on the stream as the server decides them. Without
// one (an HTTP/1 client or proxy, an older server) a batch is a Report request, and at most
// batchSlots are on the wire at once. When a stream breaks, the batches it has not answered
// are sent again as Report requests (an item the server had applied is then answered
// "lease gone", which the worker takes as settled); a stream that fails before answering
// anything is not tried again for streamRetry.

const (
	// maxBatch is the most outcomes in one batch (the server takes 1000 items).
	maxBatch = 500
	// batchSlots is how many senders may send at once.
	batchSlots = 2
	// batchTimeout bounds one Report request.
	batchTimeout = 20 * time.Second
	// streamRetry is how long a worker whose report stream failed at once reports with
	// requests before it opens one again.
	streamRetry = 5 * time.Second
	// streamLinger is the least time between two batches on a report stream.
	streamLinger = 500 * time.Microsecond
)

// batcher coalesces outcomes into reports.
type batcher struct {
	api    hopperv1connect.WorkerServiceClient // Report requests
	stream hopperv1connect.WorkerServiceClient // report streams; nil: none
	clock  clock.Clock
	// timeout bounds a Report request and the wait for a batch's answer on a stream
	// (default batchTimeout).
	timeout time.Duration

	mu          sync.Mutex
	waiting     []*queued
	sending     int           // senders at work
	rs          *reportStream // the open report stream, if any
	streamAfter time.Time     // no report stream is opened before then
	closed      bool          // close was called: no more report streams
	lastSent    time.Time     // when the last batch was sent (wall time)
	readers     sync.WaitGroup
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
// sending slot.
func (b *batcher) flush() {
	for {
		rs := b.openStream()
		b.mu.Lock()
		n := min(len(b.waiting), maxBatch)
		if n == 0 {
			b.sending--
			b.mu.Unlock()
			return
		}
		if rs != nil && n < maxBatch {
			// On a stream a batch costs little and goes at once, so under load batches
			// would hold one outcome each: one goes out at most every streamLinger, and
			// the outcomes that come meanwhile join it.
			if wait := streamLinger - time.Since(b.lastSent); wait > 0 {
				b.mu.Unlock()
				time.Sleep(wait)
				continue
			}
		}
		batch := b.waiting[:n:n]
		b.waiting = b.waiting[n:]
		b.lastSent = time.Now()
		b.mu.Unlock()
		if rs == nil || !rs.send(batch) {
			b.request(batch)
		}
	}
}

// request sends one batch as a Report request and hands each item its verdict.
func (b *batcher) request(batch []*queued) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeoutOr())
	defer cancel()
	res, err := b.api.Report(ctx, reportOf(batch))
	answer(batch, res, err)
}

// reportOf is the Report of batch.
func reportOf(batch []*queued) *hopperv1.ReportRequest {
	req := &hopperv1.ReportRequest{Outcomes: make([]*hopperv1.Outcome, len(batch))}
	for i, q := range batch {
		req.Outcomes[i] = q.outcome
	}
	return req
}

// answer hands each item of batch its verdict in res, or err, the error of the whole report.
func answer(batch []*queued, res *hopperv1.ReportResponse, err error) {
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

// reportStream is one open WorkerService.ReportStream and the batches it has not answered.
type reportStream struct {
	s       hopperv1connect.WorkerServiceReportStreamClientStream
	cancel  context.CancelFunc
	timeout time.Duration // the longest wait for an answer
	sendMu  sync.Mutex    // one Send at a time

	mu       sync.Mutex
	next     uint64
	pending  map[uint64]*sent
	answered bool  // the server answered a batch: the stream works
	err      error // why the stream broke; nil while it is usable
}

// sent is a batch on a stream, waiting for its answer.
type sent struct {
	batch []*queued
	stall *time.Timer // breaks the stream if the answer takes longer than batchTimeout
}

// openStream returns the open report stream, opening one if none is open and the last one
// did not fail at once; nil when batches go as requests.
func (b *batcher) openStream() *reportStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rs != nil || b.stream == nil || b.closed || b.clock.Now().Before(b.streamAfter) {
		return b.rs
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := b.stream.ReportStream(ctx)
	if err != nil {
		cancel()
		b.streamAfter = b.clock.Now().Add(streamRetry)
		return nil
	}
	rs := &reportStream{s: s, cancel: cancel, pending: map[uint64]*sent{}, timeout: b.timeoutOr()}
	b.rs = rs
	b.readers.Go(func() { b.read(rs) })
	return rs
}

// send puts batch on the stream; false when the stream is already broken (the batch is not
// sent). A batch that fails to go out is answered when the reader finds the stream broken.
// A batch not answered within the timeout (the server's store hangs, or the connection does)
// breaks the stream, as a request would time out: what it did not answer goes again as
// requests.
func (rs *reportStream) send(batch []*queued) bool {
	rs.mu.Lock()
	if rs.err != nil {
		rs.mu.Unlock()
		return false
	}
	rs.next++
	id := rs.next
	rs.pending[id] = &sent{batch: batch, stall: time.AfterFunc(rs.timeout, rs.cancel)}
	rs.mu.Unlock()
	rs.sendMu.Lock()
	err := rs.s.Send(&hopperv1.ReportStreamRequest{Id: id, Report: reportOf(batch)})
	rs.sendMu.Unlock()
	if err != nil {
		rs.cancel() // the reader's Receive ends, with the stream's error
	}
	return true
}

// read hands the verdicts that come back on rs to their batches, until rs ends.
func (b *batcher) read(rs *reportStream) {
	for {
		res, err := rs.s.Receive()
		if err != nil {
			b.broken(rs, err)
			return
		}
		rs.mu.Lock()
		p := rs.pending[res.GetId()]
		delete(rs.pending, res.GetId())
		rs.answered = true
		rs.mu.Unlock()
		if p != nil {
			p.stall.Stop()
			answer(p.batch, res.GetReport(), nil)
		}
	}
}

// broken retires rs, which ended with err, and sends the batches it did not answer as
// requests.
func (b *batcher) broken(rs *reportStream, err error) {
	rs.mu.Lock()
	rs.err = err
	pending, answered := rs.pending, rs.answered
	rs.pending = nil
	rs.mu.Unlock()
	rs.cancel()
	_ = rs.s.Close()
	b.mu.Lock()
	if b.rs == rs {
		b.rs = nil
	}
	if !answered {
		b.streamAfter = b.clock.Now().Add(streamRetry)
	}
	b.mu.Unlock()
	ids := make([]uint64, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pending[id].stall.Stop()
		b.request(pending[id].batch)
	}
}

// close ends the report stream, once the server has answered what was sent on it (or the
// timeout has passed); later batches go as requests.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	rs := b.rs
	b.mu.Unlock()
	if rs != nil {
		rs.sendMu.Lock()
		err := rs.s.CloseSend()
		rs.sendMu.Unlock()
		if err != nil {
			rs.cancel()
		}
		t := time.AfterFunc(b.timeoutOr(), rs.cancel)
		defer t.Stop()
	}
	b.readers.Wait()
}

// timeoutOr is the batcher's timeout, or batchTimeout.
func (b *batcher) timeoutOr() time.Duration {
	if b.timeout > 0 {
		return b.timeout
	}
	return batchTimeout
}
