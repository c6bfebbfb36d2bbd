package server

import (
	"context"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/claim"
)

// registry knows the remote workers this server has seen and its open job streams, with
// their push counters (ListStreams shows them, as Zeebe's /actuator/jobstreams does; contract
// 16).
type registry struct {
	mu      sync.Mutex
	nextID  int64
	streams map[string]*stream
	byJob   map[workerapi.LeaseRef]*stream // unfinished streamed jobs
	workers map[string]*workerInfo         // by worker name and queue
	// pushedTotal counts the jobs every stream ever pushed (hopper_stream_jobs_pushed_total).
	pushedTotal atomic.Int64
	// push counts the pushes that failed and the jobs rerouted (reroute.go).
	push pushCounters
}

type workerInfo struct {
	name, queue string
	kinds       []string
	// batchKinds are the kinds its last request takes in batches (batch_kinds).
	batchKinds []string
	lastSeen   time.Time
	streams    int
	polls      int
	activated  int64
	// heldUntil: the worker's governor holds it back until then (hold.go); zero when not.
	heldUntil time.Time
	// waits are the cancels of the worker's claims under way (untilHeld): a hold calls them
	// before it answers, so no claim of the worker starts waiting or claiming after that.
	waits map[*claimWait]struct{}
}

// claimWait is one claim under way of a remote worker.
type claimWait struct{ cancel context.CancelFunc }

func newRegistry() *registry {
	return &registry{streams: map[string]*stream{}, byJob: map[workerapi.LeaseRef]*stream{}, workers: map[string]*workerInfo{}}
}

// workerTTL is how long an idle worker stays in the registry after its last request.
const workerTTL = time.Hour

// seen records a worker's request for jobs of queues, of kinds (batch: those it takes in
// batches); the returned func undoes the open stream or poll count, and counts the jobs
// activated for it.
func (r *registry) seen(name string, queues, kinds []string, batch []workerapi.BatchKind, at time.Time, stream bool) func(activated []*hopper.JobRow) {
	var batchKinds []string
	for _, bk := range batch {
		batchKinds = append(batchKinds, bk.Kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := make([]*workerInfo, len(queues))
	for i, q := range queues {
		w := r.workerLocked(name, q, at)
		w.kinds, w.batchKinds, w.lastSeen = kinds, batchKinds, at
		if stream {
			w.streams++
		} else {
			w.polls++
		}
		ws[i] = w
	}
	return func(activated []*hopper.JobRow) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, w := range ws {
			if stream {
				w.streams--
			} else {
				w.polls--
			}
		}
		r.countLocked(name, activated)
	}
}

// pruneLocked forgets workers with nothing open that have not been seen for workerTTL.
func (r *registry) pruneLocked(now time.Time) {
	for k, w := range r.workers {
		if w.streams == 0 && w.polls == 0 && now.Sub(w.lastSeen) > workerTTL {
			delete(r.workers, k)
		}
	}
}

// count adds activated jobs to their worker's counters, per queue.
func (r *registry) count(name string, jobs []*hopper.JobRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.countLocked(name, jobs)
}

func (r *registry) countLocked(name string, jobs []*hopper.JobRow) {
	for _, j := range jobs {
		if w := r.workers[name+"\x00"+j.Queue]; w != nil {
			w.activated++
		}
	}
}

// held is an unfinished job of a stream.
type held struct {
	queue, kind string
	// row is the claimed job until it is pushed: a job never pushed can go to another stream.
	row  *hopper.JobRow
	sent bool // pushed to the worker, not only claimed for it
	// reported: the worker has reported the attempt's outcome, which is being written. The
	// worker no longer runs it, so its credit is free.
	reported bool
}

// stream is one open StreamJobs call.
type stream struct {
	id, worker string
	queues     []string
	kinds      []string
	credit     int
	// caps bound the jobs of a kind the stream holds (StreamJobsRequest.kind_concurrency): its
	// claim loop counts those it claims, reroute those it offers it; freed frees them.
	caps   *claim.KindCaps
	lease  time.Duration
	opened time.Time
	ws     []*workerInfo // its worker's entries, one per queue (kept while the stream is open)

	reg      *registry
	inflight map[workerapi.LeaseRef]*held // guarded by reg.mu
	// caller is who opened the stream; end ends it, with a cause (a revoked key).
	caller *Principal
	end    context.CancelCauseFunc
	// freed is called, once per job, when a job's credit comes free (its outcome reported,
	// or its hold ended), with the job's queue and kind; woken when the worker's hold changes. Both
	// are its claim loop's, set before the stream is registered, and must not block.
	freed func(queue, kind string)
	woken func()
	// offer hands the stream's claim loop jobs that another stream could not push
	// (claim.Loop.Offer); false when it takes none.
	offer func(queue string, jobs []*hopper.JobRow) bool

	pushed, completed, failed, released atomic.Int64
}

func (r *registry) open(st *stream, at time.Time) *stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	st.id, st.opened, st.reg, st.inflight = strconv.FormatInt(r.nextID, 10), at, r, map[workerapi.LeaseRef]*held{}
	for _, q := range st.queues {
		st.ws = append(st.ws, r.workerLocked(st.worker, q, at))
	}
	r.streams[st.id] = st
	return st
}

// close forgets the stream and returns the jobs claimed for it but never sent and, with
// pushed, also those pushed to the worker and not reported on yet. Otherwise the jobs pushed
// are the worker's to report on (closeStream).
func (r *registry) close(st *stream, pushed bool) (unsent []*hopper.JobRow, unreported []workerapi.LeaseRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.streams, st.id)
	for ref, h := range st.inflight {
		switch {
		case !h.sent:
			unsent = append(unsent, h.row)
		case pushed && !h.reported:
			unreported = append(unreported, ref)
		}
		delete(r.byJob, ref)
	}
	st.inflight = map[workerapi.LeaseRef]*held{}
	return unsent, unreported
}

// heldUntil is when the hold of the stream's worker lapses, zero when it is not held at now:
// while the worker's governor holds it back on any of the stream's queues the stream pushes
// nothing new (the first of the holds to lapse, when several do).
func (st *stream) heldUntil(now time.Time) (until time.Time) {
	st.reg.mu.Lock()
	defer st.reg.mu.Unlock()
	for _, w := range st.ws {
		if w.heldAt(now) && (until.IsZero() || w.heldUntil.Before(until)) {
			until = w.heldUntil
		}
	}
	return until
}

// wake tells the stream's loop that its worker's hold changed.
func (st *stream) wake() {
	if st.woken != nil {
		st.woken()
	}
}

// hold records a job about to be pushed to the stream.
func (st *stream) hold(j *hopper.JobRow) {
	ref := workerapi.LeaseRef{ID: j.ID, Token: j.Token}
	st.reg.mu.Lock()
	defer st.reg.mu.Unlock()
	st.inflight[ref] = &held{queue: j.Queue, kind: j.Kind, row: j}
	st.reg.byJob[ref] = st
}

// sent records that a held job was pushed to the worker.
func (st *stream) sent(ref workerapi.LeaseRef) {
	st.pushed.Add(1)
	st.reg.pushedTotal.Add(1)
	st.reg.mu.Lock()
	defer st.reg.mu.Unlock()
	if h := st.inflight[ref]; h != nil {
		h.sent, h.row = true, nil
	}
}

// outcome is how a streamed job stopped being the stream's.
type outcome int

const (
	outcomeCompleted outcome = iota
	outcomeFailed
	outcomeReleased
	outcomeLost // the lease was lost (canceled, expired, finished elsewhere)
)

// reporting notes that the worker reported the outcomes of streamed jobs, for those a stream
// holds: their credit is free at once, before the outcomes are written (a stream's throughput
// would otherwise wait for every commit). A report's outcomes are noted together, so the
// stream claims once for all of them.
func (r *registry) reporting(refs ...workerapi.LeaseRef) {
	type freed struct {
		st          *stream
		queue, kind string
	}
	var out []freed
	r.mu.Lock()
	for _, ref := range refs {
		st := r.byJob[ref]
		if st == nil {
			continue
		}
		if h := st.inflight[ref]; h != nil && !h.reported {
			h.reported = true
			out = append(out, freed{st, h.queue, h.kind})
		}
	}
	r.mu.Unlock()
	for _, f := range out {
		f.st.free(f.queue, f.kind)
	}
}

// free tells the stream's loop that a job of queue and kind no longer holds credit.
func (st *stream) free(queue, kind string) {
	if st.freed != nil {
		st.freed(queue, kind)
	}
}

// done ends a streamed job's hold, if a stream holds it, freeing its credit.
func (r *registry) done(ref workerapi.LeaseRef, o outcome) {
	r.mu.Lock()
	st := r.byJob[ref]
	var h *held
	if st != nil {
		h = st.inflight[ref]
		delete(r.byJob, ref)
		delete(st.inflight, ref)
	}
	r.mu.Unlock()
	if st == nil {
		return
	}
	if h != nil && !h.reported {
		st.free(h.queue, h.kind)
	}
	switch o {
	case outcomeCompleted:
		st.completed.Add(1)
	case outcomeFailed:
		st.failed.Add(1)
	case outcomeReleased:
		st.released.Add(1)
	}
}

// endStreams ends the open streams whose caller matches: opened without a key (keyID "")
// once a key exists, or with a key that was revoked.
func (r *registry) endStreams(keyID string, cause error) {
	r.mu.Lock()
	var ends []context.CancelCauseFunc
	for _, st := range r.streams {
		if st.caller != nil && st.caller.KeyID == keyID && st.end != nil {
			ends = append(ends, st.end)
		}
	}
	r.mu.Unlock()
	for _, end := range ends {
		end(cause)
	}
}

// streamInfo is a snapshot of one stream for the admin API.
type streamInfo struct {
	id, worker                          string
	queues, kinds                       []string
	credit, inFlight                    int
	pushed, completed, failed, released int64
	opened                              time.Time
}

// snapshot returns the open streams and the known workers, forgetting those idle too long
// by now.
func (r *registry) snapshot(now time.Time) ([]streamInfo, []workerInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked(now)
	streams := make([]streamInfo, 0, len(r.streams))
	for _, st := range r.streams {
		streams = append(streams, streamInfo{id: st.id, worker: st.worker, queues: st.queues, kinds: st.kinds,
			credit: st.credit, inFlight: len(st.inflight), pushed: st.pushed.Load(), completed: st.completed.Load(),
			failed: st.failed.Load(), released: st.released.Load(), opened: st.opened})
	}
	sort.Slice(streams, func(i, j int) bool { return streams[i].opened.Before(streams[j].opened) })
	workers := make([]workerInfo, 0, len(r.workers))
	for _, w := range r.workers {
		workers = append(workers, *w)
	}
	sort.Slice(workers, func(i, j int) bool {
		if workers[i].name != workers[j].name {
			return workers[i].name < workers[j].name
		}
		return workers[i].queue < workers[j].queue
	})
	return streams, workers
}
