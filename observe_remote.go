package hopper

import (
	"github.com/hopperjobs/hopper/internal/workerapi"
	"sync"
	"sync/atomic"
	"time"
)

// remoteAttempts remembers the attempts claimed for remote workers through this client, from
// the claim to the outcome, so that an outcome reported by id and token only (CompleteJob, on
// a path that reads no row) still names its job: the store counts its minute stats from the
// claimed row instead of reading it again, and observers see its kind, queue and run time.
// An entry leaves at its outcome or, for an attempt whose outcome never comes here (its
// worker vanished and another node rescued it, its job was canceled), once its lease has been
// over for remoteForget: a sweep looks at most once per remoteSweep, from the claim path.
type remoteAttempts struct {
	n  atomic.Int64 // entries, read without the lock: no lock on the outcomes of local attempts
	mu sync.Mutex
	m  map[workerapi.LeaseRef]*remoteAttempt
	// swept is when the last sweep ran.
	swept time.Time
}

type remoteAttempt struct {
	row        *JobRow // what an outcome needs of the claimed row: no payloads
	leaseUntil time.Time
}

// Sweep timing of remoteAttempts.
const (
	remoteSweep  = time.Minute
	remoteForget = 5 * time.Minute
)

func (r *remoteAttempts) add(rows []*JobRow, now time.Time, lease time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[workerapi.LeaseRef]*remoteAttempt{}
	}
	for _, row := range rows {
		r.m[workerapi.LeaseRef{ID: row.ID, Token: row.Token}] = &remoteAttempt{leaseUntil: now.Add(lease),
			row: &JobRow{ID: row.ID, Token: row.Token, Kind: row.Kind, Queue: row.Queue, Attempt: row.Attempt,
				State: row.State, RunAt: row.RunAt, StartedAt: row.StartedAt, GroupKey: row.GroupKey}}
	}
	if now.Sub(r.swept) >= remoteSweep {
		r.swept = now
		for ref, a := range r.m {
			if now.Sub(a.leaseUntil) > remoteForget {
				delete(r.m, ref)
			}
		}
	}
	r.n.Store(int64(len(r.m)))
}

// take removes the attempt ref names and says whether it was remembered.
func (r *remoteAttempts) take(ref workerapi.LeaseRef) bool {
	if r.n.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[ref]
	if ok {
		delete(r.m, ref)
		r.n.Store(int64(len(r.m)))
	}
	return ok
}

// row is the claimed row of the attempt ref names (without payloads), or nil.
func (r *remoteAttempts) row(ref workerapi.LeaseRef) *JobRow {
	if r.n.Load() == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[ref]; ok {
		return a.row
	}
	return nil
}

// renewed moves to until the lease end of the remembered attempts of refs whose renewal
// worked (errs[i] nil).
func (r *remoteAttempts) renewed(refs []workerapi.LeaseRef, errs []error, until time.Time) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, ref := range refs {
		if a, ok := r.m[ref]; ok && errs[i] == nil {
			a.leaseUntil = until
		}
	}
}
