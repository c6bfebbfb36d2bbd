package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// fairKeyedSQL says whether queue ?1 has fairness keys with queued jobs (the key "" of the
// unkeyed jobs does not count): its claims are then fair claims.
const fairKeyedSQL = `SELECT EXISTS (SELECT 1 FROM fair_keys WHERE queue = ?1 AND fairness_key <> '')`

// The fair claim's reads and writes of the queue's keys: the least recently served keys (?2 of
// them) and the unkeyed jobs' key, with when they were last served, the turns they used of
// their round and their weights (of those keys only); the largest served; a key served; a key
// removed once none of its jobs is queued.
const (
	fairKeysSQL = `SELECT k.fairness_key, k.served, k.used, coalesce(w.weight, 1) FROM (
			SELECT fairness_key, served, used FROM fair_keys WHERE queue = ?1 AND fairness_key = ''
			UNION ALL SELECT * FROM (SELECT fairness_key, served, used FROM fair_keys
				WHERE queue = ?1 AND fairness_key <> '' ORDER BY served, fairness_key LIMIT ?2)) k
		LEFT JOIN fair_key_weights w ON w.queue = ?1 AND w.fairness_key = k.fairness_key`
	fairLastServedSQL = `SELECT coalesce(max(served), 0) FROM fair_keys WHERE queue = ?1`
	fairServeSQL      = `INSERT INTO fair_keys (queue, fairness_key, served, used) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (queue, fairness_key) DO UPDATE SET served = excluded.served, used = excluded.used`
	fairDropSQL = `DELETE FROM fair_keys WHERE queue = ?1 AND fairness_key = ?2 AND fairness_key <> ''
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND queue = ?1 AND fairness_key = ?2)`
)

// claimFair is the fair claim of up to limit jobs of queue p.Queue (store.FairPick), inside the
// claim's transaction tx, within the capped kinds' free slots (kindLeft) and leaving the
// disabled kinds' jobs; fixed holds the claim's parameters ?1–?4. It reads the head jobs, at
// most limit each, of the store.FairKeysPerClaim(limit) least recently served keys, of the
// unkeyed jobs and of the whole queue: one ordered, limited scan of an index each.
func claimFair(ctx context.Context, tx *sql.Tx, p *store.ClaimParams, limit int, kindLeft map[string]int,
	disabled []string, fixed []any) ([]*hoppertype.JobRow, error) {
	served := map[string]store.FairKey{}
	var keys []string
	rows, err := tx.QueryContext(ctx, fairKeysSQL, p.Queue, store.FairKeysPerClaim(limit))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		var fk store.FairKey
		if err := rows.Scan(&k, &fk.Served, &fk.Used, &fk.Weight); err != nil {
			rows.Close()
			return nil, err
		}
		served[k] = fk
		if k != "" {
			keys = append(keys, k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	// The scans: ?4 queue, ?5 limit, ?6 the key, then the kinds.
	args := append(append([]any{}, fixed...), limit, "")
	in := func(vals []string) string {
		marks := make([]string, len(vals))
		for i, v := range vals {
			args = append(args, v)
			marks[i] = fmt.Sprintf("?%d", len(args))
		}
		return strings.Join(marks, ",")
	}
	filter := kindFilter(p.Kinds, disabled, in)
	scan := func(query string, key string) ([]store.FairCandidate, error) {
		args[5] = key
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []store.FairCandidate
		for rows.Next() {
			var c store.FairCandidate
			if err := rows.Scan(&c.ID, &c.Priority, &c.Key, &c.Kind); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, rows.Err()
	}
	byKey := fmt.Sprintf(fairCandidateSQL, filter+" AND j.fairness_key = ?6", "?5")
	var cands []store.FairCandidate
	read := map[string]int{} // candidates read per key
	for _, k := range keys {
		got, err := scan(byKey, k)
		if err != nil {
			return nil, err
		}
		cands, read[k] = append(cands, got...), len(got)
	}
	for _, q := range []string{
		fmt.Sprintf(fairCandidateSQL, filter+" AND j.fairness_key IS NULL AND ?6 = ''", "?5"), // the unkeyed jobs
		fmt.Sprintf(fairCandidateSQL, filter+" AND ?6 = ''", "?5"),                            // the whole queue's head
	} {
		got, err := scan(q, "")
		if err != nil {
			return nil, err
		}
		cands = append(cands, got...)
	}

	picked := store.FairPick(cands, served, limit, kindLeft)
	var jobs []*hoppertype.JobRow
	if len(picked) > 0 {
		claimArgs := append([]any{}, fixed[:3]...)
		marks := make([]string, len(picked))
		for i, c := range picked {
			claimArgs = append(claimArgs, c.ID)
			marks[i] = fmt.Sprintf("?%d", len(claimArgs))
		}
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(claimSQL, strings.Join(marks, ",")), claimArgs...)
		if err != nil {
			return nil, err
		}
		if jobs, err = scanJobs(rows); err != nil {
			return nil, err
		}
	}

	var last int64
	if err := tx.QueryRowContext(ctx, fairLastServedSQL, p.Queue).Scan(&last); err != nil {
		return nil, err
	}
	var idle []string
	for _, k := range keys {
		if read[k] == 0 {
			idle = append(idle, k)
		}
	}
	for _, w := range store.FairServed(picked, idle, served, last) {
		if _, err := tx.ExecContext(ctx, fairServeSQL, p.Queue, w.Key, w.Served, w.Used); err != nil {
			return nil, err
		}
	}
	for _, c := range picked {
		read[c.Key]--
	}
	for _, k := range keys {
		if read[k] <= 0 { // every job read of it was taken, or there were none: maybe none is left
			if _, err := tx.ExecContext(ctx, fairDropSQL, p.Queue, k); err != nil {
				return nil, err
			}
		}
	}
	return jobs, nil
}
