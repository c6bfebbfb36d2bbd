package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// queuePauseSQL stores a queue's pause flag; resuming wakes the queue's workers everywhere.
const queuePauseSQL = `WITH q AS (
	INSERT INTO {schema}.queues (name, paused, updated_at) VALUES ($2, $3, coalesce($1::timestamptz, now()))
	ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
	RETURNING name, paused
)
SELECT count(pg_notify($4, 'q:' || name)) FROM q WHERE NOT paused`

// QueueSetPaused pauses or resumes a queue.
func (s *Store) QueueSetPaused(ctx context.Context, queue string, paused bool) error {
	if _, err := s.pool.Exec(ctx, s.sql(queuePauseSQL), s.nowArg(), queue, paused, s.channel); err != nil {
		return s.wrap(err, "set queue %q paused=%v", queue, paused)
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
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.queues (name, weight, updated_at)
		VALUES ($2, $3, coalesce($1::timestamptz, now()))
		ON CONFLICT (name) DO UPDATE SET weight = excluded.weight, updated_at = excluded.updated_at`),
		s.nowArg(), queue, stored)
	if err != nil {
		return s.wrap(err, "set queue %q weight %d", queue, weight)
	}
	return nil
}

// QueueList returns the stored queue settings, by name.
func (s *Store) QueueList(ctx context.Context) ([]*store.QueueSettings, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT name, paused, coalesce(weight, 0), coalesce(rate_limit, 0), coalesce(rate_period_us, 0),
		coalesce(cap_per_key, 0), coalesce(rate_per_key_limit, 0), coalesce(rate_per_key_period_us, 0)
		FROM {schema}.queues ORDER BY name COLLATE "C"`))
	if err != nil {
		return nil, s.wrap(err, "list queues")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.QueueSettings, error) {
		q := &store.QueueSettings{}
		var period, keyPeriod int64
		err := r.Scan(&q.Name, &q.Paused, &q.Weight, &q.Rate.Limit, &period, &q.CapPerKey, &q.RatePerKey.Limit, &keyPeriod)
		q.Rate.Period = time.Duration(period) * time.Microsecond
		q.RatePerKey.Period = time.Duration(keyPeriod) * time.Microsecond
		return q, err
	})
	if err != nil {
		return nil, s.wrap(err, "list queues")
	}
	return out, nil
}

// JobCounts counts jobs per queue, kind and state (a scan of the jobs table).
func (s *Store) JobCounts(ctx context.Context) ([]*store.JobCount, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT queue, kind, state, count(*) FROM {schema}.jobs
		GROUP BY queue, kind, state ORDER BY queue COLLATE "C", kind COLLATE "C", state COLLATE "C"`))
	if err != nil {
		return nil, s.wrap(err, "count jobs")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.JobCount, error) {
		c := &store.JobCount{}
		return c, r.Scan(&c.Queue, &c.Kind, &c.State, &c.Count)
	})
	if err != nil {
		return nil, s.wrap(err, "count jobs")
	}
	return out, nil
}

// NodeHeartbeat registers the node or refreshes its heartbeat (its start time is kept), its
// governor state and whether it is idle.
func (s *Store) NodeHeartbeat(ctx context.Context, n *hoppertype.Node) error {
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.nodes (id, host, pid, started_at, heartbeat_at, holding, queues, held_queues, idle)
		VALUES ($2, $3, $4, coalesce($5, $1::timestamptz, now()), coalesce($1::timestamptz, now()), $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, holding = excluded.holding,
			queues = excluded.queues, held_queues = excluded.held_queues, idle = excluded.idle`),
		s.nowArg(), n.ID, n.Host, n.PID, nullTime(n.StartedAt), n.Holding, nonNil(n.Queues), nonNil(n.HeldQueues), n.Idle)
	if err != nil {
		return s.wrap(err, "node %s heartbeat", n.ID)
	}
	return nil
}

// nonNil stores a nil list as an empty array.
func nonNil(qs []string) []string {
	if qs == nil {
		return []string{}
	}
	return qs
}

const nodeColumns = `id, host, pid, started_at, heartbeat_at, holding, queues, held_queues, idle`

// NodeList returns the registered nodes, oldest first.
func (s *Store) NodeList(ctx context.Context) ([]*hoppertype.Node, error) {
	return s.nodes(ctx, "list nodes", `SELECT `+nodeColumns+` FROM {schema}.nodes ORDER BY started_at, id COLLATE "C"`)
}

// NodeHeldQueues returns the queues every live node that works them holds back. A node is live
// while its heartbeat is within nodeTTL, or while it is idle: it works its queues and holds
// nothing back.
func (s *Store) NodeHeldQueues(ctx context.Context, nodeTTL time.Duration) ([]string, error) {
	live, err := s.nodes(ctx, "list held queues", `SELECT `+nodeColumns+` FROM {schema}.nodes
		WHERE heartbeat_at > coalesce($1::timestamptz, now()) - $2 * interval '1 microsecond' OR idle`,
		s.nowArg(), nodeTTL.Microseconds())
	if err != nil {
		return nil, err
	}
	return store.HeldQueues(live), nil
}

func (s *Store) nodes(ctx context.Context, what, query string, args ...any) ([]*hoppertype.Node, error) {
	rs, err := s.pool.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, s.wrap(err, what)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*hoppertype.Node, error) {
		n := &hoppertype.Node{}
		err := r.Scan(&n.ID, &n.Host, &n.PID, &n.StartedAt, &n.HeartbeatAt, &n.Holding, &n.Queues, &n.HeldQueues, &n.Idle)
		n.StartedAt, n.HeartbeatAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC()
		return n, err
	})
	if err != nil {
		return nil, s.wrap(err, what)
	}
	return out, nil
}

// NodeRemove deregisters a node.
func (s *Store) NodeRemove(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.nodes WHERE id = $1`), id); err != nil {
		return s.wrap(err, "remove node %s", id)
	}
	return nil
}

// leaderSQL takes the lease when it is free or expired, renews it for its holder, and leaves
// it alone otherwise. The update is unconditional (it may rewrite the row unchanged) so that
// RETURNING always yields the current holder, also after waiting for a concurrent election:
// a conditional ON CONFLICT … WHERE would return nothing, and a second SELECT could read a
// stale holder from the statement's snapshot.
const leaderSQL = `INSERT INTO {schema}.leader AS l (id, node_id, term, expires_at, swept_before)
VALUES (1, $2, 1, coalesce($1::timestamptz, now()) + $3 * interval '1 microsecond', $4)
ON CONFLICT (id) DO UPDATE SET
	swept_before = greatest(l.swept_before, excluded.swept_before),
	term = CASE WHEN l.node_id = excluded.node_id THEN l.term
	            WHEN l.expires_at <= coalesce($1::timestamptz, now()) THEN l.term + 1
	            ELSE l.term END,
	expires_at = CASE WHEN l.node_id = excluded.node_id OR l.expires_at <= coalesce($1::timestamptz, now())
	                  THEN excluded.expires_at ELSE l.expires_at END,
	node_id = CASE WHEN l.expires_at <= coalesce($1::timestamptz, now()) THEN excluded.node_id ELSE l.node_id END
RETURNING node_id, term, expires_at`

// LeaderElect takes or renews the leader lease and returns the holder. Expiry is judged on the
// database clock (or Config.Clock), and the term is issued by the database.
func (s *Store) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	var l hoppertype.Leadership
	err := s.pool.QueryRow(ctx, s.sql(leaderSQL), s.nowArg(), p.NodeID, micros(p.TTL), nullTime(p.SweptBefore)).Scan(&l.NodeID, &l.Term, &l.ExpiresAt)
	if err != nil {
		return nil, s.wrap(err, "elect leader")
	}
	l.ExpiresAt = l.ExpiresAt.UTC()
	return &l, nil
}

// LeaderResign ends nodeID's lease at once, so another node can take it.
func (s *Store) LeaderResign(ctx context.Context, nodeID string) error {
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.leader SET expires_at = coalesce($1::timestamptz, now())
		WHERE node_id = $2 AND expires_at > coalesce($1::timestamptz, now())`), s.nowArg(), nodeID)
	if err != nil {
		return s.wrap(err, "resign leadership of %s", nodeID)
	}
	return nil
}

// clearedQueueWakeSQL and clearedKindWakeSQL wrap a statement that clears a queue's cap or rate limit (the CTE cleared,
// returning the queue's name) or a kind's (returning the kind): when it cleared one,
// it wakes the workers of that queue, or of every queue for a kind. Jobs the limit held back
// are claimable now, and a claim that read the limit in one statement and its absence in the
// next took the queue for empty: its claim cursor must be forgotten (cursor.go).
const (
	clearedQueueWakeSQL = `WITH cleared AS (%s RETURNING name) SELECT count(pg_notify($3, '` + payloadQueue + `' || name)) FROM cleared`
	clearedKindWakeSQL  = `WITH cleared AS (%s RETURNING kind) SELECT count(pg_notify($3, '` + payloadQueue + `')) FROM cleared`
)

// LimitSet sets or removes a fleet-wide cap, or a cap per key (p.PerKey). A kind whose cap is
// removed keeps its row while it holds another setting.
func (s *Store) LimitSet(ctx context.Context, p *store.LimitParams) error {
	var query string
	col, what := "max_running", "limit"
	if p.PerKey {
		col, what = "cap_per_key", "limit per key"
	}
	args := []any{s.nowArg(), p.Name, p.MaxRunning}
	switch {
	case p.Scope == store.LimitQueue && p.MaxRunning > 0:
		query = `INSERT INTO {schema}.queues (name, ` + col + `, updated_at) VALUES ($2, $3, coalesce($1::timestamptz, now()))
			ON CONFLICT (name) DO UPDATE SET ` + col + ` = excluded.` + col + `, updated_at = excluded.updated_at`
	case p.Scope == store.LimitQueue:
		query = fmt.Sprintf(clearedQueueWakeSQL, `UPDATE {schema}.queues SET `+col+` = NULL,
			updated_at = coalesce($1::timestamptz, now()) WHERE name = $2 AND `+col+` IS NOT NULL`)
		args = []any{args[0], args[1], s.channel}
	case p.Scope == store.LimitKind && p.MaxRunning > 0:
		query = `INSERT INTO {schema}.kinds (kind, ` + col + `, updated_at) VALUES ($2, $3, coalesce($1::timestamptz, now()))
			ON CONFLICT (kind) DO UPDATE SET ` + col + ` = excluded.` + col + `, updated_at = excluded.updated_at`
	case p.Scope == store.LimitKind:
		err := s.clearKindSetting(ctx, fmt.Sprintf(clearedKindWakeSQL, `UPDATE {schema}.kinds SET `+col+` = NULL,
			updated_at = coalesce($1::timestamptz, now()) WHERE kind = $2 AND `+col+` IS NOT NULL`), args[0], args[1], s.channel)
		if err != nil {
			return s.wrap(err, "set %s %s of %q", p.Scope, what, p.Name)
		}
		return nil
	default:
		return fmt.Errorf("set limit: unknown scope %q", p.Scope)
	}
	if _, err := s.pool.Exec(ctx, s.sql(query), args...); err != nil {
		return s.wrap(err, "set %s %s of %q", p.Scope, what, p.Name)
	}
	return nil
}

// LimitList returns every cap, queues first, by name.
func (s *Store) LimitList(ctx context.Context) ([]*store.LimitParams, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT 'queue', name COLLATE "C", max_running FROM {schema}.queues WHERE max_running IS NOT NULL
		UNION ALL SELECT 'kind', kind COLLATE "C", max_running FROM {schema}.kinds WHERE max_running IS NOT NULL
		ORDER BY 1 DESC, 2`))
	if err != nil {
		return nil, s.wrap(err, "list limits")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.LimitParams, error) {
		l := &store.LimitParams{}
		var scope string
		err := r.Scan(&scope, &l.Name, &l.MaxRunning)
		l.Scope = store.LimitScope(scope)
		return l, err
	})
	if err != nil {
		return nil, s.wrap(err, "list limits")
	}
	return out, nil
}

// RateSet sets or removes a fleet-wide rate limit. A new limit starts with a full bucket; a
// changed one keeps its bucket, up to the new limit. A kind whose limit is removed keeps its
// row while it has another setting.
func (s *Store) RateSet(ctx context.Context, p *store.RateParams) error {
	if p.PerKey {
		return s.rateSetPerKey(ctx, p)
	}
	var query string
	args := []any{s.nowArg(), p.Name, p.Rate.Limit, micros(p.Rate.Period)}
	switch {
	case p.Scope == store.LimitQueue && !p.Rate.IsZero():
		query = fmt.Sprintf(setRateSQL, "queues", "name")
	case p.Scope == store.LimitQueue:
		query = fmt.Sprintf(clearedQueueWakeSQL, `UPDATE {schema}.queues SET rate_limit = NULL, rate_period_us = NULL,
			rate_tokens = NULL, rate_at = NULL, updated_at = coalesce($1::timestamptz, now())
			WHERE name = $2 AND rate_limit IS NOT NULL`)
		args = []any{args[0], args[1], s.channel}
	case p.Scope == store.LimitKind && !p.Rate.IsZero():
		query = fmt.Sprintf(setRateSQL, "kinds", "kind")
	case p.Scope == store.LimitKind:
		err := s.clearKindSetting(ctx, fmt.Sprintf(clearedKindWakeSQL, `UPDATE {schema}.kinds SET rate_limit = NULL,
			rate_period_us = NULL, rate_tokens = NULL, rate_at = NULL, updated_at = coalesce($1::timestamptz, now())
			WHERE kind = $2 AND rate_limit IS NOT NULL`), args[0], args[1], s.channel)
		if err != nil {
			return s.wrap(err, "set %s rate limit of %q", p.Scope, p.Name)
		}
		return nil
	default:
		return fmt.Errorf("set rate limit: unknown scope %q", p.Scope)
	}
	if _, err := s.pool.Exec(ctx, s.sql(query), args...); err != nil {
		return s.wrap(err, "set %s rate limit of %q", p.Scope, p.Name)
	}
	return nil
}

// setRateSQL stores a rate limit in the row of a queue (%s queues, %s name) or a kind. The
// bucket is refilled to now under the old rate before the new one applies.
const setRateSQL = `WITH clk AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS now)
	INSERT INTO {schema}.%[1]s AS t (%[2]s, rate_limit, rate_period_us, rate_tokens, rate_at, updated_at)
	SELECT $2::text, $3::integer, $4::bigint, $3::float8, clk.now, clk.now FROM clk
	ON CONFLICT (%[2]s) DO UPDATE SET rate_limit = excluded.rate_limit, rate_period_us = excluded.rate_period_us,
		rate_tokens = CASE WHEN t.rate_limit IS NULL THEN excluded.rate_tokens
			ELSE least(excluded.rate_limit, t.rate_limit, t.rate_tokens + greatest(0, extract(epoch FROM excluded.rate_at - t.rate_at) * 1e6)
			     * t.rate_limit / t.rate_period_us) END,
		rate_at = CASE WHEN t.rate_limit IS NULL THEN excluded.rate_at ELSE greatest(t.rate_at, excluded.rate_at) END,
		updated_at = excluded.updated_at`

// rateSetPerKey sets or removes the rate limit per key of a queue or a kind. A changed limit
// keeps the keys' buckets, up to the new limit; a removed one deletes them (and wakes the
// claimers it may have held, as a removed cap does).
func (s *Store) rateSetPerKey(ctx context.Context, p *store.RateParams) error {
	table, key := "queues", "name"
	wake := clearedQueueWakeSQL
	switch p.Scope {
	case store.LimitQueue:
	case store.LimitKind:
		table, key, wake = "kinds", "kind", clearedKindWakeSQL
	default:
		return fmt.Errorf("set rate limit per key: unknown scope %q", p.Scope)
	}
	var err error
	if p.Rate.IsZero() {
		b := &pgx.Batch{}
		b.Queue(s.sql(fmt.Sprintf(wake, `UPDATE {schema}.`+table+` SET rate_per_key_limit = NULL, rate_per_key_period_us = NULL,
			updated_at = coalesce($1::timestamptz, now()) WHERE `+key+` = $2 AND rate_per_key_limit IS NOT NULL`)), s.nowArg(), p.Name, s.channel)
		b.Queue(s.sql(`DELETE FROM {schema}.key_buckets WHERE scope = $1 AND name = $2`), string(p.Scope), p.Name)
		if p.Scope == store.LimitKind {
			b.Queue(s.sql(pruneKindSQL), p.Name)
		}
		err = s.inTx(ctx, b)
	} else {
		_, err = s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.`+table+` (`+key+`, rate_per_key_limit, rate_per_key_period_us, updated_at)
			VALUES ($2, $3, $4, coalesce($1::timestamptz, now()))
			ON CONFLICT (`+key+`) DO UPDATE SET rate_per_key_limit = excluded.rate_per_key_limit,
				rate_per_key_period_us = excluded.rate_per_key_period_us, updated_at = excluded.updated_at`),
			s.nowArg(), p.Name, p.Rate.Limit, micros(p.Rate.Period))
	}
	if err != nil {
		return s.wrap(err, "set %s rate limit per key of %q", p.Scope, p.Name)
	}
	return nil
}

// inTx sends the batch b in one transaction.
func (s *Store) inTx(ctx context.Context, b *pgx.Batch) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
