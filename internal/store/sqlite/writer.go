package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
)

// SQLite has one writer, and with synchronous=FULL every commit costs an fsync. So all writes
// go through one loop that commits them in groups: while a transaction commits, the next
// requests (claims, outcomes, inserts from many goroutines) gather, and the loop runs them in
// one transaction, each in its own savepoint so one request's error undoes only its own
// changes. A request's result is handed back only after the commit is durable.

// errGroupLost: a savepoint could not be rolled back, so the shared transaction is no longer
// what its requests think; the whole group fails.
var errGroupLost = errors.New("shared write transaction lost")

// maxGroup bounds the requests of one transaction.
const maxGroup = 64

type writeReq struct {
	ctx   context.Context
	stmts []*sql.Stmt
	fn    func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error
	done  chan error
}

// write runs fn in a write transaction, possibly shared with other requests, and returns once
// that transaction has committed (or fn's changes were rolled back). The statements named in
// queries are prepared first and handed to fn bound to the transaction. fn gets a context that
// is not canceled with ctx: the driver interrupts the connection on cancellation, which would
// roll back the whole shared transaction, other callers' writes included. ctx is checked
// before fn runs.
func (s *Store) write(ctx context.Context, queries []string, fn func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), stmts: make([]*sql.Stmt, len(queries))}
	for i, q := range queries {
		st, err := s.prepared(ctx, q)
		if err != nil {
			return s.noteWrite(err)
		}
		req.stmts[i] = st
	}
	select {
	case <-s.quit:
		return store.ErrClosed
	default:
	}
	select {
	case s.writes <- req:
	case <-s.quit:
		return store.ErrClosed
	}
	// Wait even if ctx ends: the request may already be in a committing transaction, and a
	// claim's jobs must reach their caller. A request that raced with Close gets ErrClosed.
	select {
	case err := <-req.done:
		return s.noteWrite(err)
	case <-s.loopDone:
		select {
		case err := <-req.done:
			return s.noteWrite(err)
		default:
			return store.ErrClosed
		}
	}
}

// noteWrite marks a write's error that means the database cannot take writes now
// (store.ErrUnavailable) and remembers it for Ping until a write succeeds.
func (s *Store) noteWrite(err error) error {
	err = unavailable(err)
	switch {
	case err == nil:
		s.writeFault.Store(nil)
	case errors.Is(err, store.ErrUnavailable):
		s.writeFault.Store(&err)
	}
	return err
}

func (s *Store) writeLoop() {
	defer close(s.loopDone)
	for {
		var first *writeReq
		select {
		case first = <-s.writes:
		case <-s.quit:
			s.drainClosed()
			return
		}
		group := []*writeReq{first}
	gather:
		for len(group) < maxGroup {
			select {
			case r := <-s.writes:
				group = append(group, r)
			default:
				break gather
			}
		}
		s.commitGroup(group)
	}
}

// drainClosed fails requests that raced with Close.
func (s *Store) drainClosed() {
	for {
		select {
		case r := <-s.writes:
			r.done <- store.ErrClosed
		default:
			return
		}
	}
}

func (s *Store) commitGroup(group []*writeReq) {
	errs := make([]error, len(group))
	tx, err := s.writer.BeginTx(context.Background(), nil)
	if err != nil {
		for _, r := range group {
			r.done <- fmt.Errorf("begin: %w", err)
		}
		return
	}
	ok := 0
	for i, r := range group {
		if len(group) == 1 {
			errs[i] = s.run(tx, r) // alone: an error rolls back the whole transaction
		} else {
			errs[i] = s.runInSavepoint(tx, r)
		}
		if errors.Is(errs[i], errGroupLost) {
			// The transaction itself is gone: nothing of this group can be trusted to commit.
			tx.Rollback()
			for _, r := range group {
				r.done <- fmt.Errorf("write aborted: %w", errs[i])
			}
			return
		}
		if errs[i] == nil {
			ok++
		}
	}
	if ok == 0 {
		tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("commit: %w", err)
			}
		}
	}
	for i, r := range group {
		r.done <- errs[i]
	}
}

// run runs one request's function with its statements bound to tx.
func (s *Store) run(tx *sql.Tx, r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	ctx := context.WithoutCancel(r.ctx)
	stmts := make([]*sql.Stmt, len(r.stmts))
	for i, st := range r.stmts {
		stmts[i] = tx.StmtContext(ctx, st)
	}
	return r.fn(ctx, tx, stmts)
}

// runInSavepoint runs one request; on error its changes are rolled back, others' are kept.
func (s *Store) runInSavepoint(tx *sql.Tx, r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if _, err := tx.Exec("SAVEPOINT req"); err != nil {
		return err
	}
	err := s.run(tx, r)
	if err != nil {
		if _, rbErr := tx.Exec("ROLLBACK TO req"); rbErr != nil {
			// Both wrapped: a full disk's error still says the store is unavailable.
			return fmt.Errorf("%w: %w (rollback to savepoint: %v)", errGroupLost, err, rbErr)
		}
	}
	if _, relErr := tx.Exec("RELEASE req"); relErr != nil && err == nil {
		err = relErr
	}
	return err
}

// querier is what runs a write transaction's statements: a *sql.Tx, or a cachedTx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// cachedTx runs tx's statements from the store's cache of prepared statements
// (Store.prepared), the one write's statements come from, in which Open puts cachedQueries: a
// statement run for each job of a batch (an ending's release of its children, a child's
// insert) is parsed once per store, not once per run. Parsing them was half the CPU of a batch
// of endings with children. A statement not prepared yet runs unprepared: preparing one inside
// the transaction would wait for the writer's one connection, which the transaction holds.
// Each statement is bound to the transaction once per cachedTx (bound): Tx.StmtContext makes
// a new transaction-specific statement on every call, so a batch keeps one cachedTx for its
// items.
type cachedTx struct {
	tx    *sql.Tx
	s     *Store
	bound map[string]*sql.Stmt
}

func (s *Store) cached(tx *sql.Tx) *cachedTx { return &cachedTx{tx: tx, s: s} }

// stmt is query's prepared statement in the transaction, or nil if it is not prepared.
func (c *cachedTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := c.bound[query]; st != nil {
		return st
	}
	st := c.s.preparedStmt(query)
	if st == nil {
		return nil
	}
	if c.bound == nil {
		c.bound = map[string]*sql.Stmt{}
	}
	st = c.tx.StmtContext(ctx, st)
	c.bound[query] = st
	return st
}

func (c *cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.tx.ExecContext(ctx, query, args...)
}

func (c *cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.tx.QueryContext(ctx, query, args...)
}

func (c *cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.tx.QueryRowContext(ctx, query, args...)
}
