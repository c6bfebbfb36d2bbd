package postgres

import (
	"context"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// QueueSetKeyWeight stores the weight of fairness key key in queue; 0 or 1 removes it.
func (s *Store) QueueSetKeyWeight(ctx context.Context, queue, key string, weight int) error {
	if weight < 0 || weight > store.MaxKeyWeight {
		return fmt.Errorf("set the weight of key %q in queue %q to %d: %w", key, queue, weight, store.ErrInvalid)
	}
	var err error
	if weight <= 1 {
		_, err = s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.fair_key_weights WHERE queue = $1 AND fairness_key = $2`), queue, key)
	} else {
		_, err = s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.fair_key_weights (queue, fairness_key, weight) VALUES ($1, $2, $3)
			ON CONFLICT (queue, fairness_key) DO UPDATE SET weight = excluded.weight`), queue, key, weight)
	}
	if err != nil {
		return s.wrap(err, "set the weight of key %q in queue %q to %d", key, queue, weight)
	}
	return nil
}

// QueueKeyWeights returns the stored key weights, by queue, then key.
func (s *Store) QueueKeyWeights(ctx context.Context) ([]*store.KeyWeight, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT queue, fairness_key, weight FROM {schema}.fair_key_weights
		ORDER BY queue COLLATE "C", fairness_key COLLATE "C"`))
	if err != nil {
		return nil, s.wrap(err, "list key weights")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.KeyWeight, error) {
		w := &store.KeyWeight{}
		return w, r.Scan(&w.Queue, &w.Key, &w.Weight)
	})
	if err != nil {
		return nil, s.wrap(err, "list key weights")
	}
	return out, nil
}
