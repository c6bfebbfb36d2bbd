package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// QueueSetPaused pauses or resumes a queue.
func (s *Store) QueueSetPaused(ctx context.Context, queue string, paused bool) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO queues (name, paused, updated_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at`,
			queue, paused, micros(s.clock.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("set queue %q paused=%v: %w", queue, paused, err)
	}
	return nil
}

// QueueSetWeight stores a queue's fair-share weight; 0 removes it.
func (s *Store) QueueSetWeight(ctx context.Context, queue string, weight int) error {
	if weight < 0 {
		return fmt.Errorf("set queue %q weight %d: %w", queue, weight, store.ErrInvalid)
	}
	var stored *int
	if weight > 0 {
		stored = &weight
	}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO queues (name, weight, updated_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (name) DO UPDATE SET weight = excluded.weight, updated_at = excluded.updated_at`,
			queue, stored, micros(s.clock.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("set queue %q weight %d: %w", queue, weight, err)
	}
	return nil
}

// QueueList returns the stored queue settings, by name.
func (s *Store) QueueList(ctx context.Context) ([]*store.QueueSettings, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT name, paused, coalesce(weight, 0), coalesce(rate_limit, 0),
		coalesce(rate_period_us, 0), coalesce(cap_per_key, 0), coalesce(rate_per_key_limit, 0),
		coalesce(rate_per_key_period_us, 0) FROM queues ORDER BY name`)
	if err != nil {
		return nil, wrap(err, "list queues")
	}
	defer rows.Close()
	var out []*store.QueueSettings
	for rows.Next() {
		q := &store.QueueSettings{}
		var period, keyPeriod int64
		if err := rows.Scan(&q.Name, &q.Paused, &q.Weight, &q.Rate.Limit, &period,
			&q.CapPerKey, &q.RatePerKey.Limit, &keyPeriod); err != nil {
			return nil, wrap(err, "list queues")
		}
		q.Rate.Period = time.Duration(period) * time.Microsecond
		q.RatePerKey.Period = time.Duration(keyPeriod) * time.Microsecond
		out = append(out, q)
	}
	return out, rows.Err()
}

// JobCounts counts jobs per queue, kind and state (a scan of the jobs table).
func (s *Store) JobCounts(ctx context.Context) ([]*store.JobCount, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT queue, kind, state, count(*) FROM jobs
		GROUP BY queue, kind, state ORDER BY queue, kind, state`)
	if err != nil {
		return nil, wrap(err, "count jobs")
	}
	defer rows.Close()
	var out []*store.JobCount
	for rows.Next() {
		c := &store.JobCount{}
		if err := rows.Scan(&c.Queue, &c.Kind, &c.State, &c.Count); err != nil {
			return nil, wrap(err, "count jobs")
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// NodeHeartbeat registers the node or refreshes its heartbeat, its governor state and whether
// it is idle.
func (s *Store) NodeHeartbeat(ctx context.Context, n *hoppertype.Node) error {
	queues, held := queueList(n.Queues), queueList(n.HeldQueues)
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		started := now
		if !n.StartedAt.IsZero() {
			started = micros(n.StartedAt)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO nodes (id, host, pid, started_at, heartbeat_at, holding, queues, held_queues, idle)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, holding = excluded.holding,
				queues = excluded.queues, held_queues = excluded.held_queues, idle = excluded.idle`,
			n.ID, n.Host, n.PID, started, now, n.Holding, queues, held, n.Idle)
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s heartbeat: %w", n.ID, err)
	}
	return nil
}

// queueList encodes queue names as a JSON array.
func queueList(qs []string) string {
	if len(qs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(qs) // strings always encode
	return string(b)
}

const nodeColumns = `id, host, pid, started_at, heartbeat_at, holding, queues, held_queues, idle`

// scanNode reads a row of nodeColumns.
func scanNode(rows *sql.Rows) (*hoppertype.Node, error) {
	n := &hoppertype.Node{}
	var started, beat int64
	var queues, held string
	if err := rows.Scan(&n.ID, &n.Host, &n.PID, &started, &beat, &n.Holding, &queues, &held, &n.Idle); err != nil {
		return nil, err
	}
	n.StartedAt, n.HeartbeatAt = fromMicros(started), fromMicros(beat)
	if err := json.Unmarshal([]byte(queues), &n.Queues); err != nil {
		return nil, fmt.Errorf("node %s queues: %w", n.ID, err)
	}
	if err := json.Unmarshal([]byte(held), &n.HeldQueues); err != nil {
		return nil, fmt.Errorf("node %s held queues: %w", n.ID, err)
	}
	return n, nil
}

// NodeList returns the registered nodes, oldest first.
func (s *Store) NodeList(ctx context.Context) ([]*hoppertype.Node, error) {
	return s.nodes(ctx, "list nodes", `SELECT `+nodeColumns+` FROM nodes ORDER BY started_at, id`)
}

// NodeHeldQueues returns the queues every live node that works them holds back. A node is live
// while its heartbeat is within nodeTTL, or while it is idle: it works its queues and holds
// nothing back.
func (s *Store) NodeHeldQueues(ctx context.Context, nodeTTL time.Duration) ([]string, error) {
	live, err := s.nodes(ctx, "list held queues", `SELECT `+nodeColumns+` FROM nodes WHERE heartbeat_at > ? OR idle`,
		micros(s.clock.Now().Add(-nodeTTL)))
	if err != nil {
		return nil, err
	}
	return store.HeldQueues(live), nil
}

func (s *Store) nodes(ctx context.Context, what, query string, args ...any) ([]*hoppertype.Node, error) {
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err, what)
	}
	defer rows.Close()
	var out []*hoppertype.Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, wrap(err, what)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, what)
	}
	return out, nil
}

// NodeRemove deregisters a node.
func (s *Store) NodeRemove(ctx context.Context, id string) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove node %s: %w", id, err)
	}
	return nil
}

// LeaderElect takes or renews the leader lease and returns the holder.
func (s *Store) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	var l hoppertype.Leadership
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := s.clock.Now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO leader (id, node_id, term, expires_at, swept_before) VALUES (1, ?1, 1, ?2, ?4)
			ON CONFLICT (id) DO UPDATE SET
				term = CASE WHEN leader.node_id = excluded.node_id THEN leader.term ELSE leader.term + 1 END,
				node_id = excluded.node_id, expires_at = excluded.expires_at,
				swept_before = nullif(max(coalesce(leader.swept_before, 0), coalesce(excluded.swept_before, 0)), 0)
			WHERE leader.node_id = excluded.node_id OR leader.expires_at <= ?3`,
			p.NodeID, micros(now.Add(p.TTL)), micros(now), nullMicros(p.SweptBefore)); err != nil {
			return err
		}
		var exp int64
		err := tx.QueryRowContext(ctx, `SELECT node_id, term, expires_at FROM leader WHERE id = 1`).Scan(&l.NodeID, &l.Term, &exp)
		l.ExpiresAt = fromMicros(exp)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("elect leader: %w", err)
	}
	return &l, nil
}

// LeaderResign ends nodeID's lease at once, so another node can take it.
func (s *Store) LeaderResign(ctx context.Context, nodeID string) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, `UPDATE leader SET expires_at = ?1 WHERE node_id = ?2 AND expires_at > ?1`,
			micros(s.clock.Now()), nodeID)
		return err
	})
	if err != nil {
		return fmt.Errorf("resign leadership of %s: %w", nodeID, err)
	}
	return nil
}

// LimitSet sets or removes a fleet-wide cap, or a cap per key (p.PerKey). A kind whose cap is
// removed keeps its row while it holds another setting.
func (s *Store) LimitSet(ctx context.Context, p *store.LimitParams) error {
	var query string
	var prune bool
	col := "max_running"
	if p.PerKey {
		col = "cap_per_key"
	}
	args := []any{p.Name, p.MaxRunning, micros(s.clock.Now())}
	switch {
	case p.Scope == store.LimitQueue && p.MaxRunning > 0:
		query = `INSERT INTO queues (name, ` + col + `, updated_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (name) DO UPDATE SET ` + col + ` = excluded.` + col + `, updated_at = excluded.updated_at`
	case p.Scope == store.LimitQueue:
		query, args = `UPDATE queues SET `+col+` = NULL, updated_at = ?2 WHERE name = ?1`, []any{p.Name, args[2]}
	case p.Scope == store.LimitKind && p.MaxRunning > 0:
		query = `INSERT INTO kinds (kind, ` + col + `, updated_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (kind) DO UPDATE SET ` + col + ` = excluded.` + col + `, updated_at = excluded.updated_at`
	case p.Scope == store.LimitKind:
		query, args, prune = `UPDATE kinds SET `+col+` = NULL, updated_at = ?2 WHERE kind = ?1`, []any{p.Name, args[2]}, true
	default:
		return fmt.Errorf("set limit: unknown scope %q", p.Scope)
	}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, query, args...)
		if err == nil && prune {
			_, err = tx.ExecContext(ctx, pruneKindSQL, p.Name)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s %s of %q: %w", p.Scope, limitName(p.PerKey, "limit"), p.Name, err)
	}
	return nil
}

// limitName names a limit in errors: name, or name per key.
func limitName(perKey bool, name string) string {
	if perKey {
		return name + " per key"
	}
	return name
}

// LimitList returns every cap, queues first, by name.
func (s *Store) LimitList(ctx context.Context) ([]*store.LimitParams, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT 'queue', name, max_running FROM queues WHERE max_running IS NOT NULL
		UNION ALL SELECT 'kind', kind, max_running FROM kinds WHERE max_running IS NOT NULL ORDER BY 1 DESC, 2`)
	if err != nil {
		return nil, wrap(err, "list limits")
	}
	defer rows.Close()
	var out []*store.LimitParams
	for rows.Next() {
		l := &store.LimitParams{}
		if err := rows.Scan(&l.Scope, &l.Name, &l.MaxRunning); err != nil {
			return nil, wrap(err, "list limits")
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// RateSet sets or removes a fleet-wide rate limit. A new limit starts with a full bucket; a
// changed one keeps its bucket (refilled to now under the old rate), up to the new limit. A
// kind whose limit is removed keeps its row while it has another setting.
func (s *Store) RateSet(ctx context.Context, p *store.RateParams) error {
	table, key := "queues", "name"
	switch p.Scope {
	case store.LimitQueue:
	case store.LimitKind:
		table, key = "kinds", "kind"
	default:
		return fmt.Errorf("set rate limit: unknown scope %q", p.Scope)
	}
	if p.PerKey {
		return s.rateSetPerKey(ctx, p, table, key)
	}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := s.clock.Now()
		if p.Rate.IsZero() {
			_, err := tx.ExecContext(ctx, `UPDATE `+table+` SET rate_limit = NULL, rate_period_us = NULL, rate_tokens = NULL,
				rate_at = NULL, updated_at = ?2 WHERE `+key+` = ?1`, p.Name, micros(now))
			if err == nil && p.Scope == store.LimitKind {
				_, err = tx.ExecContext(ctx, pruneKindSQL, p.Name)
			}
			return err
		}
		b := store.Bucket{Rate: p.Rate, Tokens: float64(p.Rate.Limit), At: now}
		var old storedBucket
		err := tx.QueryRowContext(ctx, `SELECT rate_limit, rate_period_us, rate_tokens, rate_at FROM `+table+` WHERE `+key+` = ?`,
			p.Name).Scan(old.dest()...)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if ob, ok := old.bucket(); ok {
			ob = ob.Refill(now)
			b.Tokens, b.At = min(ob.Tokens, b.Tokens), ob.At
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO `+table+` (`+key+`, rate_limit, rate_period_us, rate_tokens, rate_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6)
			ON CONFLICT (`+key+`) DO UPDATE SET rate_limit = excluded.rate_limit, rate_period_us = excluded.rate_period_us,
				rate_tokens = excluded.rate_tokens, rate_at = excluded.rate_at, updated_at = excluded.updated_at`,
			p.Name, p.Rate.Limit, p.Rate.Period.Microseconds(), b.Tokens, micros(b.At), micros(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s rate limit of %q: %w", p.Scope, p.Name, err)
	}
	return nil
}

// rateSetPerKey sets or removes the rate limit per key of a queue or kind (the row of table
// named by column key). A changed limit keeps the keys' buckets, up to the new limit; a removed
// one deletes them.
func (s *Store) rateSetPerKey(ctx context.Context, p *store.RateParams, table, key string) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		if p.Rate.IsZero() {
			_, err := tx.ExecContext(ctx, `UPDATE `+table+` SET rate_per_key_limit = NULL, rate_per_key_period_us = NULL,
				updated_at = ?2 WHERE `+key+` = ?1`, p.Name, now)
			if err == nil {
				_, err = tx.ExecContext(ctx, `DELETE FROM key_buckets WHERE scope = ?1 AND name = ?2`, string(p.Scope), p.Name)
			}
			if err == nil && p.Scope == store.LimitKind {
				_, err = tx.ExecContext(ctx, pruneKindSQL, p.Name)
			}
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (`+key+`, rate_per_key_limit, rate_per_key_period_us, updated_at)
			VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (`+key+`) DO UPDATE SET rate_per_key_limit = excluded.rate_per_key_limit,
				rate_per_key_period_us = excluded.rate_per_key_period_us, updated_at = excluded.updated_at`,
			p.Name, p.Rate.Limit, p.Rate.Period.Microseconds(), now)
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s rate limit per key of %q: %w", p.Scope, p.Name, err)
	}
	return nil
}
