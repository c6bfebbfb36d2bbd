package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
)

// QueueSetKeyWeight stores the weight of fairness key key in queue; 0 or 1 removes it.
func (s *Store) QueueSetKeyWeight(ctx context.Context, queue, key string, weight int) error {
	if weight < 0 || weight > store.MaxKeyWeight {
		return fmt.Errorf("set the weight of key %q in queue %q to %d: %w", key, queue, weight, store.ErrInvalid)
	}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		if weight <= 1 {
			_, err := tx.ExecContext(ctx, `DELETE FROM fair_key_weights WHERE queue = ?1 AND fairness_key = ?2`, queue, key)
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO fair_key_weights (queue, fairness_key, weight) VALUES (?1, ?2, ?3)
			ON CONFLICT (queue, fairness_key) DO UPDATE SET weight = excluded.weight`, queue, key, weight)
		return err
	})
	if err != nil {
		return fmt.Errorf("set the weight of key %q in queue %q to %d: %w", key, queue, weight, err)
	}
	return nil
}

// QueueKeyWeights returns the stored key weights, by queue, then key.
func (s *Store) QueueKeyWeights(ctx context.Context) ([]*store.KeyWeight, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT queue, fairness_key, weight FROM fair_key_weights ORDER BY queue, fairness_key`)
	if err != nil {
		return nil, wrap(err, "list key weights")
	}
	defer rows.Close()
	var out []*store.KeyWeight
	for rows.Next() {
		w := &store.KeyWeight{}
		if err := rows.Scan(&w.Queue, &w.Key, &w.Weight); err != nil {
			return nil, wrap(err, "list key weights")
		}
		out = append(out, w)
	}
	return out, rows.Err()
}
