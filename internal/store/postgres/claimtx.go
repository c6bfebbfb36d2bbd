package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlConn runs the statements of a claim: a pgx.Tx, or a pipelinedTx.
type sqlConn interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// pipelinedTx is a transaction whose BEGIN went out in the same round trip as its first
// statements, and whose COMMIT goes out in the same round trip as its last ones. pgx's Begin
// and Commit are a round trip each; a claim that locks and reads its settings, claims, then
// writes what it served (claimCapped) is three round trips this way instead of five or more
// (docs/benchmarks.md, "Fairness between tenants").
type pipelinedTx struct {
	*pgxpool.Conn
	done bool // committed, or rolled back
}

// beginPipelined acquires a connection and sends BEGIN, then the statements of b, in one round
// trip. The caller reads b's results from the BatchResults and closes it, and must call
// release whatever happens.
func (s *Store) beginPipelined(ctx context.Context, b *pgx.Batch) (*pipelinedTx, pgx.BatchResults, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx := &pipelinedTx{Conn: conn}
	all := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: "BEGIN"}}, b.QueuedQueries...)}
	br := conn.SendBatch(ctx, all)
	if _, err := br.Exec(); err != nil {
		br.Close()
		tx.release(ctx)
		return nil, nil, err
	}
	return tx, br, nil
}

// commit sends the statements of b, then COMMIT, in one round trip, and reads every result:
// the first error is returned, and then nothing was committed.
func (t *pipelinedTx) commit(ctx context.Context, b *pgx.Batch) error {
	b.Queue("COMMIT")
	if err := t.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	t.done = true
	return nil
}

// release rolls the transaction back unless it committed, and gives the connection back. A
// connection whose rollback failed is still in a transaction, and the pool closes it.
func (t *pipelinedTx) release(ctx context.Context) {
	if !t.done {
		_, _ = t.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	t.Release()
}

// fairQueues are the queues whose last claim found fairness keys: their claims go straight to
// the fair claim (claimCapped) instead of trying the one-statement claim first, which takes
// nothing from them and only says they are keyed. A claim that finds a queue without keys
// forgets it; one that finds keys in a queue not here, through the one-statement claim, adds it.
//
// It also takes the fair claims of one queue in this process one at a time (claiming). A fair
// claim reads its candidates without locking them and locks those it picks: two at once read
// the same head and the second finds it taken, and comes back short, which tells the claim
// loop the queue is drained (measured: a keyed flood at 90–150 jobs/s, most claims short).
// One after the other, the second reads after the first committed.
type fairQueues struct {
	mu     sync.Mutex
	queues map[string]*fairQueue
}

type fairQueue struct {
	keyed bool          // guarded by fairQueues.mu
	turn  chan struct{} // holds a value while a fair claim of the queue runs
}

func (f *fairQueues) get(queue string) *fairQueue {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	if q == nil {
		if f.queues == nil {
			f.queues = map[string]*fairQueue{}
		}
		q = &fairQueue{turn: make(chan struct{}, 1)}
		f.queues[queue] = q
	}
	return q
}

func (f *fairQueues) has(queue string) bool {
	q := f.get(queue)
	f.mu.Lock()
	defer f.mu.Unlock()
	return q.keyed
}

func (f *fairQueues) set(queue string, keyed bool) {
	q := f.get(queue)
	f.mu.Lock()
	defer f.mu.Unlock()
	q.keyed = keyed
}

// claiming waits until no other fair claim of queue runs in this process, or ctx ends, and
// returns the function that lets the next one run.
func (f *fairQueues) claiming(ctx context.Context, queue string) (func(), error) {
	q := f.get(queue)
	select {
	case q.turn <- struct{}{}:
		return func() { <-q.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
