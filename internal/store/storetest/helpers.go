package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

const (
	defaultQueue = "default"
	defaultKind  = "send-invoice"
	defaultLease = 30 * time.Second
	workerA      = "worker-a"
	workerB      = "worker-b"
)

// newID returns a UUIDv7; successive calls in one process return increasing ids.
func newID(t *testing.T) string {
	t.Helper()
	id, err := uuid.NewV7()
	require.NoError(t, err)
	return id.String()
}

// option adjusts the parameters of a job the test inserts.
type option func(p *store.InsertParams)

func inQueue(q string) option       { return func(p *store.InsertParams) { p.Queue = q } }
func withKind(k string) option      { return func(p *store.InsertParams) { p.Kind = k } }
func withPriority(n int) option     { return func(p *store.InsertParams) { p.Priority = n } }
func withArgs(a string) option      { return func(p *store.InsertParams) { p.Args = json.RawMessage(a) } }
func withGroup(g string) option     { return func(p *store.InsertParams) { p.GroupKey = g } }
func withFairness(k string) option  { return func(p *store.InsertParams) { p.FairnessKey = k } }
func withRunAt(at time.Time) option { return func(p *store.InsertParams) { p.RunAt = at } }
func withMaxAttempts(n int) option  { return func(p *store.InsertParams) { p.MaxAttempts = n } }

func withKey(key string, ttl time.Duration) option {
	return func(p *store.InsertParams) { p.IdempotencyKey, p.IdempotencyTTL = key, ttl }
}

// params returns valid, defaulted insert parameters with a fresh id.
func params(t *testing.T, opts ...option) *store.InsertParams {
	t.Helper()
	p := &store.InsertParams{
		ID: newID(t), Kind: defaultKind, Queue: defaultQueue, Args: json.RawMessage(`{"invoice":1}`),
		MaxAttempts: 5, Actor: hoppertype.ActorAPI, Reason: "enqueue",
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// insertMany inserts the jobs in one batch and requires success.
func (b *bundle) insertMany(t *testing.T, ps ...*store.InsertParams) []*store.InsertResult {
	t.Helper()
	res, err := b.store.JobInsertMany(t.Context(), ps)
	require.NoError(t, err)
	require.Len(t, res, len(ps))
	return res
}

// insert inserts one new job and returns it.
func (b *bundle) insert(t *testing.T, opts ...option) *hoppertype.JobRow {
	t.Helper()
	res := b.insertMany(t, params(t, opts...))
	require.False(t, res[0].Existing)
	return res[0].Job
}

func (b *bundle) get(t *testing.T, id string) *hoppertype.JobRow {
	t.Helper()
	job, err := b.store.JobGet(t.Context(), id)
	require.NoError(t, err)
	return job
}

// claimAs claims with the given parameters and requires success.
func (b *bundle) claimAs(t *testing.T, p *store.ClaimParams) []*hoppertype.JobRow {
	t.Helper()
	jobs, _, err := b.store.JobClaim(t.Context(), p)
	require.NoError(t, err)
	require.LessOrEqual(t, len(jobs), p.Limit)
	return jobs
}

// claim claims up to limit jobs of queue for workerA under the default lease.
func (b *bundle) claim(t *testing.T, queue string, limit int) []*hoppertype.JobRow {
	t.Helper()
	return b.claimAs(t, &store.ClaimParams{Queue: queue, Limit: limit, WorkerID: workerA, LeaseDuration: defaultLease})
}

// claimOne claims exactly one job of queue for workerA.
func (b *bundle) claimOne(t *testing.T, queue string) *hoppertype.JobRow {
	t.Helper()
	jobs := b.claim(t, queue, 1)
	require.Len(t, jobs, 1)
	return jobs[0]
}

// running inserts a job in a queue of its own and claims it for workerA.
func (b *bundle) running(t *testing.T, opts ...option) *hoppertype.JobRow {
	t.Helper()
	queue := "q-" + newID(t)
	job := b.insert(t, append(opts, inQueue(queue))...)
	claimed := b.claimOne(t, queue)
	require.Equal(t, job.ID, claimed.ID)
	return claimed
}

// finishing returns parameters that end job's current attempt in state.
func finishing(job *hoppertype.JobRow, state hoppertype.JobState) *store.FinishParams {
	outcome := hoppertype.OutcomeError
	if state == hoppertype.StateCompleted {
		outcome = hoppertype.OutcomeOK
	}
	return &store.FinishParams{
		ID: job.ID, Token: job.Token, State: state, Outcome: outcome,
		Actor: hoppertype.ActorWorker, Reason: "worker says " + string(state),
	}
}

// finish ends one attempt and returns the item's error; the batch itself must succeed.
func (b *bundle) finish(t *testing.T, p *store.FinishParams) error {
	t.Helper()
	errs, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{p})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	return errs[0]
}

func (b *bundle) rescue(t *testing.T) *store.RescueResult {
	t.Helper()
	res, err := b.store.JobRescueExpired(t.Context(), &store.RescueParams{})
	require.NoError(t, err)
	return res
}

func (b *bundle) promote(t *testing.T) *store.PromoteResult {
	t.Helper()
	res, err := b.store.JobPromoteScheduled(t.Context(), &store.PromoteParams{})
	require.NoError(t, err)
	return res
}

func (b *bundle) events(t *testing.T, id string) []*hoppertype.Event {
	t.Helper()
	evs, err := b.store.JobEvents(t.Context(), id)
	require.NoError(t, err)
	return evs
}

func (b *bundle) attempts(t *testing.T, id string) []*hoppertype.AttemptRecord {
	t.Helper()
	as, err := b.store.JobAttempts(t.Context(), id)
	require.NoError(t, err)
	return as
}

// listAll lists every job matching p, following cursors.
func (b *bundle) listAll(t *testing.T, p store.ListParams) []*hoppertype.JobRow {
	t.Helper()
	var out []*hoppertype.JobRow
	for {
		res, err := b.store.JobList(t.Context(), &p)
		require.NoError(t, err)
		out = append(out, res.Jobs...)
		if res.NextCursor == "" {
			return out
		}
		p.Cursor = res.NextCursor
	}
}

func ids(jobs []*hoppertype.JobRow) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// sameTime requires two instants to be equal, whatever their locations.
func sameTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.Truef(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
}
