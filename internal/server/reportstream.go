package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
)

// maxStreamBatches bounds the batches of one report stream being applied at once; past it the
// stream reads no more until one is answered, and HTTP/2's flow control holds the worker back.
const maxStreamBatches = 64

// ReportStream applies the batches of a report stream as Report applies a request, each as
// soon as it arrives, concurrently with the batches before it, and answers each under its id
// once its items are decided. It ends when the worker closes its side (after answering what
// it sent), when the worker goes away, or when the server shuts down (after answering the
// batches received).
func (w *workerService) ReportStream(ctx context.Context, stream hopperv1connect.WorkerServiceReportStreamServerStream) error {
	caller := principalFrom(ctx)
	release, ok := w.s.limits.acquire("report stream", caller.KeyID, w.s.cfg.MaxStreamsPerKey)
	if !ok {
		return overLimit(ctx, "report streams")
	}
	defer release()
	shutdown, stopWatching := w.s.untilShutdown(ctx)
	defer stopWatching()

	// The reader hands over what the worker sends. Receive cannot be interrupted: when this
	// handler returns first (the server shuts down), Connect closes the request and the
	// reader's Receive ends with an error at once.
	type received struct {
		req *hopperv1.ReportStreamRequest
		err error
	}
	in := make(chan received)
	go func() {
		for {
			req, err := stream.Receive()
			select {
			case in <- received{req, err}:
			case <-shutdown.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var (
		batches sync.WaitGroup
		sendMu  sync.Mutex
		slots   = make(chan struct{}, maxStreamBatches)
	)
	defer batches.Wait()
	for {
		var r received
		select {
		case r = <-in:
		case <-shutdown.Done():
			return shutdownErr(ctx)
		}
		switch {
		case errors.Is(r.err, io.EOF):
			return nil
		case r.err != nil:
			return r.err
		}
		// A report stream follows the keys as a job stream does (contract 16): once its caller's
		// key is revoked, or a key exists for a caller that came without one, it applies no more.
		if !w.stillAllowed(ctx, caller) {
			return lapsedError(authEnded(caller))
		}
		report := r.req.GetReport()
		if err := checkReportSize(report); err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-shutdown.Done():
			return shutdownErr(ctx)
		}
		batches.Go(func() {
			defer func() { <-slots }()
			res := w.report(ctx, report)
			sendMu.Lock()
			defer sendMu.Unlock()
			// A failed send means the worker went away: it sends what it had pending again.
			_ = stream.Send(&hopperv1.ReportStreamResponse{Id: r.req.GetId(), Report: res})
		})
	}
}

// shutdownErr is why a stream ends: the server is shutting down, or (ctx ended) the caller
// went away.
func shutdownErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errShuttingDown()
}

// errShuttingDown tells a worker on a stream or a long poll that this server is going away.
func errShuttingDown() error {
	return connect.NewError(connect.CodeUnavailable, "server shutting down; reconnect to another node or later")
}

// checkReportSize refuses a report of more than maxReportItems items.
func checkReportSize(req *hopperv1.ReportRequest) error {
	if n := len(req.GetOutcomes()) + len(req.GetRenewals()); n > maxReportItems {
		return connect.NewError(connect.CodeInvalidArgument,
			fmt.Sprintf("outcomes and renewals: %d items, more than %d", n, maxReportItems))
	}
	return nil
}
