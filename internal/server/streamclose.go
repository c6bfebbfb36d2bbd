package server

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hopperjobs/hopper"
)

// reasonWorkerGone is recorded for the jobs of a stream whose worker went away.
const reasonWorkerGone = "stream closed: worker went away"

// reportGrace is how long a stream whose worker closed it waits for the worker to report on
// or release the jobs pushed to it before they count as lost. A worker that stops closes its
// stream (so nothing more is pushed to it) and then releases the jobs it will not run.
const reportGrace = 2 * time.Second

// closeStream hands back the jobs a closed stream still held, as the server (ActorServer).
// When the worker went away (its request ended, or a push to it failed) each job pushed to it
// that it has not reported on within reportGrace is a worker loss: rescued, counting against
// the job's max_rescues, so a job that kills the worker processes it is pushed to ends as a
// dead letter instead of looping. Jobs claimed for it but never sent, and every job of a
// stream the server ended itself (shutting down, a revoked key, an error of its own), go back
// at once without counting. endErr is what StreamJobs returns: nil when the worker went away.
func (w *workerService) closeStream(ctx context.Context, st *stream, endErr error) {
	why := w.closeReason(ctx, endErr)
	if why != reasonWorkerGone {
		pushed, unsent := w.s.reg.close(st)
		w.handBack(ctx, append(unsent, pushed...), why, w.s.client.WorkerAPI().ReturnJob)
		return
	}
	w.handBack(ctx, w.s.reg.unsent(st), why, w.s.client.WorkerAPI().ReturnJob)
	st.awaitReports(reportGrace)
	pushed, unsent := w.s.reg.close(st)
	w.rescue(ctx, pushed, why)
	w.handBack(ctx, unsent, why, w.s.client.WorkerAPI().ReturnJob)
}

// closeReason says why a stream ended: the server ended it, or the worker went away. ctx is
// the stream's context, which only the worker's request, a shutdown or a revoked key ends.
func (w *workerService) closeReason(ctx context.Context, endErr error) string {
	switch {
	case errors.Is(context.Cause(ctx), errKeyRevoked):
		return "stream closed: API key revoked"
	case w.s.shuttingDown():
		return "stream closed: server shutting down"
	case endErr == nil || ctx.Err() != nil:
		return reasonWorkerGone
	}
	return "stream closed: server error"
}

// rescue returns jobs whose worker went away to their queues, each counting a rescue. If the
// store fails, their leases (no longer renewed) expire and the leader rescues them.
func (w *workerService) rescue(ctx context.Context, refs []hopper.LeaseRef, why string) {
	if len(refs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := w.s.client.WorkerAPI().RescueJobs(ctx, refs, why); err != nil {
		w.s.log.Warn("rescue the jobs of a closed stream", "jobs", len(refs), "err", err)
	}
}

// release gives jobs back to their queue at once at the worker's request, without consuming
// their attempts.
func (w *workerService) release(ctx context.Context, refs []hopper.LeaseRef, why string) {
	w.handBack(ctx, refs, why, w.s.client.WorkerAPI().ReleaseJob)
}

// handBack gives jobs back through give (the client's ReleaseJob or ReturnJob), concurrently,
// so the completer writes them in a few transactions. Stale leases are skipped.
func (w *workerService) handBack(ctx context.Context, refs []hopper.LeaseRef, why string,
	give func(ctx context.Context, id string, token int64, why string) error) {
	if len(refs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	var mu sync.Mutex
	var failed []string
	var first error
	concurrently(len(refs), func(i int) {
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
