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
type fairQueues struct {
	mu     sync.Mutex
	queues map[string]bool
}

func (f *fairQueues) has(queue string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queues[queue]
}

func (f *fairQueues) set(queue string, keyed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !keyed {
		delete(f.queues, queue)
		return
	}
	if f.queues == nil {
		f.queues = map[string]bool{}
	}
	f.queues[queue] = true
}
