package remote

import (
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"golang.org/x/sync/errgroup"
)

// A worker in Stream mode stops without stranding jobs. A job pushed to it stays its own after
// the stream closes (until its lease expires, then a rescue counted against the job's
// max_rescues). So a stopping worker reports on its running jobs (or releases them) while its
// stream is open, keeps (without starting) the jobs pushed to it meanwhile, waits for the
// pushes in flight, closes the stream, and only then releases the jobs it kept: released
// earlier, they would free credit and the server would push them, or others, straight back.

// settleQuiet is how long a stopping worker waits for another push before it closes its
// stream; settleMax bounds the wait.
const (
	settleQuiet = 100 * time.Millisecond
	settleMax   = time.Second
)

// decline keeps a job pushed to a stopping worker, to release once the stream is closed.
func (w *Worker) decline(j *hopperv1.ActivatedJob) {
	w.mu.Lock()
	w.declined = append(w.declined, j)
	w.mu.Unlock()
	select {
	case w.declineC <- struct{}{}:
	default:
	}
}

// settle waits until the server can push no more (the declined and still running jobs fill
// the worker's credit) or nothing has been pushed for settleQuiet: a job in flight when the
// stream closes would never be received, and would count as lost.
func (w *Worker) settle() {
	quiet := time.NewTimer(settleQuiet)
	defer quiet.Stop()
	limit := time.NewTimer(settleMax)
	defer limit.Stop()
	for {
		w.mu.Lock()
		full := len(w.declined)+len(w.running) >= w.cfg.Concurrency+w.cfg.Prefetch
		w.mu.Unlock()
		if full {
			return
		}
		select {
		case <-w.declineC:
			quiet.Reset(settleQuiet)
		case <-quiet.C:
			return
		case <-limit.C:
			return
		}
	}
}

// releaseDeclined releases the declined jobs, a few at a time.
func (w *Worker) releaseDeclined() {
	w.mu.Lock()
	jobs := w.declined
	w.declined = nil
	w.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(16)
	for _, j := range jobs {
		g.Go(func() error { w.release(j, "worker stopping"); return nil })
	}
	_ = g.Wait() // release logs its own failures
}
