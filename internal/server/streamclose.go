package server

import (
	"cmp"
	"context"
	"errors"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"sync"

	"github.com/hopperjobs/hopper"
)

// reasonWorkerGone is recorded for the unsent jobs of a stream whose worker went away.
const reasonWorkerGone = "stream closed: worker went away"

// closeStream gives back at once, uncounted and as the server's doing (ActorServer), the jobs
// claimed for a closed stream but never sent. The jobs pushed to its worker stay the worker's:
// it renews their leases itself and reports their outcomes on any connection, to this server
// or another, while their tokens are current, so a stream that breaks (a proxy, the network,
// this server restarting) does not undo its worker's work. A worker that went away for good,
// or hangs, stops renewing: its jobs' leases expire within one lease and the leader rescues
// them, each counting a rescue (bounded by the job's max_rescues); its late reports are
// refused. endErr is what StreamJobs returns: nil when the worker went away.
//
// A stream that ended because its caller may no longer have it (its key revoked, or opened
// without a key that the server now requires) also gives back, at once, the jobs pushed to
// it and not reported on: its worker's reports will be refused, so they would otherwise wait
// for their leases to expire, and count a rescue.
//
// The jobs claimed for it and never sent go first to another open stream of this server
// that takes them and has credit free (registry.reroute), unless the server shuts down: the
// worker's loss does not make them wait.
func (w *workerService) closeStream(ctx context.Context, st *stream, endErr error) {
	cause := context.Cause(ctx)
	lapsed := errors.Is(cause, errKeyRevoked) || errors.Is(cause, errKeyRequired)
	unsent, unreported := w.s.reg.close(st, lapsed)
	if len(unsent) > 0 && !w.s.shuttingDown() {
		unsent = w.s.reg.reroute(st, unsent, w.s.clock.Now())
	}
	w.handBack(ctx, append(refsOf(unsent), unreported...), w.closeReason(ctx, endErr), w.s.api.ReturnJob)
}

// closeReason says why a stream ended: the server ended it, or the worker went away. ctx is
// the stream's context, which only the worker's request, a shutdown or a revoked key ends.
func (w *workerService) closeReason(ctx context.Context, endErr error) string {
	switch {
	case errors.Is(context.Cause(ctx), errKeyRevoked):
		return "stream closed: API key revoked"
	case errors.Is(context.Cause(ctx), errKeyRequired):
		return "stream closed: opened without an API key, which the server now requires"
	case w.s.shuttingDown():
		return "stream closed: server shutting down"
	case endErr == nil || ctx.Err() != nil:
		return reasonWorkerGone
	}
	return "stream closed: server error"
}

// release gives jobs back to their queue at once at the worker's request, without consuming
// their attempts.
func (w *workerService) release(ctx context.Context, refs []workerapi.LeaseRef, why string) {
	w.handBack(ctx, refs, why, w.s.api.ReleaseJob)
}

// handBack gives jobs back through give (the client's ReleaseJob or ReturnJob), concurrently,
// so the completer writes them in a few transactions. Stale leases are skipped.
func (w *workerService) handBack(ctx context.Context, refs []workerapi.LeaseRef, why string,
	give func(ctx context.Context, id string, token int64, why string) error) {
	if len(refs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	var mu sync.Mutex
	var failed []string
	var first error
	concurrently(len(refs), 32, func(i int) {
		err := give(ctx, refs[i].ID, refs[i].Token, why)
		if err != nil && !errors.Is(err, hopper.ErrLeaseLost) {
			mu.Lock()
			failed = append(failed, refs[i].ID)
			first = cmp.Or(first, err)
			mu.Unlock()
		}
	})
	if len(failed) > 0 {
		// One line for the lot: when the store is away every one of them fails alike. Their
		// leases are no longer renewed, so the leader rescues them once they expire.
		w.s.log.Warn("could not hand streamed jobs back; their leases will expire", "jobs", len(failed),
			"job_ids", failed[:min(len(failed), 10)], "why", why, "err", first)
	}
}
