package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// fairAhead is how far a claimer claims ahead in a queue with fairness keys (store.Hold.FairAhead):
// for the jobs that end within 5 ms. Every claim and every ending goes through the one writer
// that a quiet key's enqueue waits for too, so larger claims ahead cost the quiet keys here
// more than on PostgreSQL. Measured (hopper bench --scenario tenants: a 100,000-job flood
// beside nine keys of a job a second, 20 workers; the quiet keys' p99 beside the flood over
// their p99 without it, and the flood's jobs/s): 5 ms 0.72-1.28x, 8,400-9,500/s; 10 ms
// 0.86-2.5x, 9,700-12,300/s; 20 ms 2.1-3.6x; a whole round trip's ends (up to 1,000 jobs)
// 7-14x, 11,000-12,700/s.
const fairAhead = 5 * time.Millisecond

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
// claim's transaction tx, within the capped kinds' free slots (c.KindLimits) and leaving the
// disabled kinds' jobs; fixed holds the claim's parameters ?1–?4. It reads the head jobs, at
// most limit each, of the store.FairKeysPerClaim(limit) least recently served keys, of the
// unkeyed jobs and of the whole queue: one ordered, limited scan of an index each. The limits
// per key in c bound each key's candidates before the pick (store.KeyLeft), and the buckets
// per key the claim charged are written back in tx.
func claimFair(ctx context.Context, tx *sql.Tx, p *store.ClaimParams, limit int, c *store.CapsLeft,
	disabled []string, fixed []any, now time.Time) ([]*hoppertype.JobRow, *store.KeyLeft, error) {
	jobs, kl, err := claimFairJobs(ctx, tx, p, limit, c, disabled, fixed, now)
	if err != nil || kl == nil {
		return jobs, kl, err
	}
	kl.Spend(jobs)
	return jobs, kl, writeKeyBuckets(ctx, tx, kl, limit, now)
}

// claimFairJobs is claimFair but for the writes of the buckets per key.
func claimFairJobs(ctx context.Context, tx *sql.Tx, p *store.ClaimParams, limit int, caps *store.CapsLeft,
	disabled []string, fixed []any, now time.Time) ([]*hoppertype.JobRow, *store.KeyLeft, error) {
	kindLeft := caps.KindLimits(limit)
	served := map[string]store.FairKey{}
	var keys []string
	rows, err := tx.QueryContext(ctx, fairKeysSQL, p.Queue, store.FairKeysPerClaim(limit))
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var k string
		var fk store.FairKey
		if err := rows.Scan(&k, &fk.Served, &fk.Used, &fk.Weight); err != nil {
			rows.Close()
			return nil, nil, err
		}
		served[k] = fk
		if k != "" {
			keys = append(keys, k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
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
			return nil, nil, err
		}
		cands, read[k] = append(cands, got...), len(got)
	}
	for _, q := range []string{
		fmt.Sprintf(fairCandidateSQL, filter+" AND j.fairness_key IS NULL AND ?6 = ''", "?5"), // the unkeyed jobs
		fmt.Sprintf(fairCandidateSQL, filter+" AND ?6 = ''", "?5"),                            // the whole queue's head
	} {
		got, err := scan(q, "")
		if err != nil {
			return nil, nil, err
		}
		cands = append(cands, got...)
	}

	// The limits per key leave each key its free slots and starts (keylimits.go).
	var kl *store.KeyLeft
	pickFrom := cands
	if len(caps.KeyLimits) > 0 {
		var err error
		if kl, err = loadKeyLeft(ctx, tx, p.Queue, caps.KeyLimits, cands, now); err != nil {
			return nil, nil, err
		}
		pickFrom = kl.Bound(cands)
	}
	takable := map[string]int{} // candidates per key the claim may take
	for _, c := range pickFrom {
		takable[c.Key]++
	}
	picked := store.FairPick(pickFrom, served, limit, kindLeft)
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
			return nil, nil, err
		}
		if jobs, err = scanJobs(rows); err != nil {
			return nil, nil, err
		}
		store.SortPicked(jobs, picked)
	}

	var last int64
	if err := tx.QueryRowContext(ctx, fairLastServedSQL, p.Queue).Scan(&last); err != nil {
		return nil, nil, err
	}
	var idle []string
	for _, k := range keys {
		if takable[k] == 0 { // none of its jobs read could be taken: not even at its cap per key
			idle = append(idle, k)
		}
	}
	for _, w := range store.FairServed(picked, idle, served, last) {
		if _, err := tx.ExecContext(ctx, fairServeSQL, p.Queue, w.Key, w.Served, w.Used); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range picked {
		read[c.Key]--
	}
	for _, k := range keys {
		if read[k] <= 0 { // every job read of it was taken, or there were none: maybe none is left
			if _, err := tx.ExecContext(ctx, fairDropSQL, p.Queue, k); err != nil {
				return nil, nil, err
			}
		}
	}
	return jobs, kl, nil
}

// loadKeyLeft reads, in the claim's transaction, the running jobs and the stored buckets of the
// candidates' keys under the limits per key that apply to the claim: a range of the index of
// running keyed jobs and of key_buckets per key.
func loadKeyLeft(ctx context.Context, tx *sql.Tx, queue string, limits []store.KeyLimit, cands []store.FairCandidate,
	now time.Time) (*store.KeyLeft, error) {
	keys := store.KeysOf(cands)
	if len(keys) == 0 {
		return store.NewKeyLeft(queue, limits, nil, nil, now), nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",")
	var running []store.KeyRunning
	var stored []store.KeyBucket
	var capped, rated bool
	for _, l := range limits {
		capped, rated = capped || l.Cap > 0, rated || !l.Rate.IsZero()
	}
	if capped {
		rows, err := tx.QueryContext(ctx, `SELECT fairness_key, queue, kind, count(*) FROM jobs
			WHERE state = 'running' AND fairness_key IS NOT NULL AND fairness_key IN (`+marks+`)
			GROUP BY fairness_key, queue, kind`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var r store.KeyRunning
			if err := rows.Scan(&r.Key, &r.Queue, &r.Kind, &r.Running); err != nil {
				rows.Close()
				return nil, err
			}
			running = append(running, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	for _, l := range limits {
		if !rated || l.Rate.IsZero() {
			continue
		}
		rows, err := tx.QueryContext(ctx, `SELECT fairness_key, tokens, at FROM key_buckets
			WHERE scope = ? AND name = ? AND fairness_key IN (`+marks+`)`, append([]any{string(l.Scope), l.Name}, args...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			b := store.KeyBucket{Scope: l.Scope, Name: l.Name}
			var at int64
			if err := rows.Scan(&b.Key, &b.Tokens, &at); err != nil {
				rows.Close()
				return nil, err
			}
			b.At = fromMicros(at)
			stored = append(stored, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return store.NewKeyLeft(queue, limits, running, stored, now), nil
}

// writeKeyBuckets writes back the buckets per key the claim took starts from, deletes those
// it read full again, and sweeps up to store.KeyBucketSweep(limit) rows of each per-key rate
// limit last written a period or more ago (full again).
func writeKeyBuckets(ctx context.Context, tx *sql.Tx, kl *store.KeyLeft, limit int, now time.Time) error {
	put, drop := kl.Writes()
	for _, b := range put {
		if _, err := tx.ExecContext(ctx, `INSERT INTO key_buckets (scope, name, fairness_key, tokens, at) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (scope, name, fairness_key) DO UPDATE SET tokens = excluded.tokens, at = excluded.at`,
			string(b.Scope), b.Name, b.Key, b.Tokens, micros(b.At)); err != nil {
			return err
		}
	}
	for _, b := range drop {
		if _, err := tx.ExecContext(ctx, `DELETE FROM key_buckets WHERE scope = ?1 AND name = ?2 AND fairness_key = ?3`,
			string(b.Scope), b.Name, b.Key); err != nil {
			return err
		}
	}
	for _, l := range kl.RateLimits() {
		if _, err := tx.ExecContext(ctx, `DELETE FROM key_buckets WHERE scope = ?1 AND name = ?2 AND fairness_key IN (
			SELECT fairness_key FROM key_buckets WHERE scope = ?1 AND name = ?2 AND at <= ?3 LIMIT ?4)`,
			string(l.Scope), l.Name, micros(now.Add(-l.Rate.Period)), store.KeyBucketSweep(limit)); err != nil {
			return err
		}
	}
	return nil
}
