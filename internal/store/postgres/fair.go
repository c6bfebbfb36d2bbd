package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// fairReadSQL reads what a fair claim chooses from (store.FairPick), in one statement: the
// head jobs, at most $3 each, of the $1 least recently served keys of queue $2 (each an ordered,
// limited walk of jobs_fair), of its unkeyed jobs (jobs_fair under NULL) and of the whole queue
// (jobs_claim), of the kinds $4 (empty: any) but the disabled ones; then the keys read with when
// they were last served, the unkeyed jobs' key too, and the queue's largest served. A job's row
// has an id; a key's has none and its served in last; the largest served is the row without a
// key. Each key's row carries the turns it used of its round and its weight (read for these
// keys only, 1 when none is set). It locks nothing.
var fairReadSQL = `WITH keys AS MATERIALIZED (
	SELECT f.fairness_key AS k, f.served, f.used, coalesce(w.weight, 1) AS weight FROM (
		SELECT fairness_key, served, used FROM {schema}.fair_keys WHERE queue = $2 AND fairness_key <> ''
		ORDER BY served, fairness_key LIMIT $1) f
	LEFT JOIN {schema}.fair_key_weights w ON w.queue = $2 AND w.fairness_key = f.fairness_key)
SELECT c.id, c.priority, c.fkey, c.kind, 0::bigint, 0, 0 FROM keys CROSS JOIN LATERAL (` +
	byKey(fmt.Sprintf(fairCandidates, kindFilter("$4")+" AND j.fairness_key >= keys.k AND j.fairness_key <= keys.k", "$3")) + `) c
UNION ALL SELECT *, 0::bigint, 0, 0 FROM (` + byKey(fmt.Sprintf(fairCandidates, kindFilter("$4")+" AND j.fairness_key IS NULL", "$3")) + `) u
UNION ALL SELECT *, 0::bigint, 0, 0 FROM (` + fmt.Sprintf(fairCandidates, kindFilter("$4"), "$3") + `) h
UNION ALL SELECT NULL, 0, k, NULL, served, used, weight FROM keys
UNION ALL SELECT NULL, 0, '', NULL, served, used, 1 FROM {schema}.fair_keys WHERE queue = $2 AND fairness_key = ''
UNION ALL SELECT NULL, 0, NULL, NULL, coalesce(max(served), 0), 0, 0 FROM {schema}.fair_keys WHERE queue = $2`

// byKey orders a scan of one key's jobs by key first (the same order, the key being one): only
// jobs_fair gives that order, so the planner walks it. Ordered as the whole queue is, a scan
// may walk jobs_claim instead and filter by key (the statistics of a queue one key floods
// make that look cheap), reading the whole flood to find a quiet key's one job: 25 ms a key
// behind 100,000 jobs. The key is written as a range of one (>= and <=), not =: PostgreSQL
// drops an ORDER BY column that = makes constant, and would order as the whole queue again.
func byKey(scan string) string {
	return strings.Replace(scan, "ORDER BY j.priority DESC, j.id", "ORDER BY j.fairness_key, j.priority DESC, j.id", 1)
}

// fairClaimSQL claims the first $3 of the jobs $6, in that order, that are still queued and not
// locked by another claim. Claims that run at once read the same jobs and choose alike: each
// takes the next ones in the fair order that the others did not take, instead of coming back
// short. Parameters as claimUncappedSQL's.
const fairClaimSQL = `WITH picked AS MATERIALIZED (SELECT j.id FROM unnest($6::text[]) WITH ORDINALITY AS c(id, n)
	JOIN {schema}.jobs j ON j.id = c.id
	WHERE j.state = 'queued' AND j.queue = $2
	ORDER BY c.n LIMIT $3 FOR UPDATE OF j SKIP LOCKED)` + claimUpdate

// The fair claim's writes to the queue's keys: the keys it served, with when ($1 queue, $2
// keys in name order, so that claims lock them in one order, $3 their served, $4 the turns they
// used of their round); a key none of whose jobs is queued any more, removed (the key a range of
// one for the look-up, as in byKey: = estimates, in the generic plan a prepared statement gets,
// that a flooding key's statistics hold for every key, and a whole-table scan finds the first
// match soonest; TestFairDropPlanWithAFlood).
const (
	fairServeSQL = `INSERT INTO {schema}.fair_keys AS f (queue, fairness_key, served, used)
	SELECT $1, t.k, t.s, t.u FROM unnest($2::text[], $3::bigint[], $4::int[]) AS t(k, s, u)
	ON CONFLICT (queue, fairness_key) DO UPDATE SET served = excluded.served, used = excluded.used`
	fairDropSQL = `DELETE FROM {schema}.fair_keys WHERE queue = $1 AND fairness_key = $2 AND fairness_key <> ''
	AND NOT EXISTS (SELECT 1 FROM {schema}.jobs WHERE state = 'queued' AND queue = $1
		AND fairness_key >= $2 AND fairness_key <= $2)`
)

// fairServed is what a fair claim leaves to do once committed: the keys it read that may have
// no queued job left.
type fairServed struct{ drop []string }

// claimFair is the fair claim of up to limit jobs of queue p.Queue (store.FairPick) in tx,
// within the capped kinds' free slots (kindLeft), of the kinds asked for (empty: any) but the
// disabled ones, starting them at at. It reads O(limit·(store.FairKeysPerClaim(limit)+2)) index
// entries. It writes when it served each key in tx, and returns the keys to remove after
// commit if none of their jobs is queued: removing them in tx could lock keys out of the
// order the writes of served lock them in.
func (s *Store) claimFair(ctx context.Context, tx pgx.Tx, p *store.ClaimParams, limit int, kindLeft map[string]int, kinds []string, at any) ([]*hoppertype.JobRow, fairServed, error) {
	var out fairServed
	rs, err := tx.Query(ctx, s.sql(fairReadSQL), store.FairKeysPerClaim(limit), p.Queue, limit, kinds)
	if err != nil {
		return nil, out, err
	}
	var cands []store.FairCandidate
	served := map[string]store.FairKey{}
	var keys []string
	var last int64
	for rs.Next() {
		var id, key, kind *string
		var priority, used, weight int
		var n int64
		if err := rs.Scan(&id, &priority, &key, &kind, &n, &used, &weight); err != nil {
			rs.Close()
			return nil, out, err
		}
		switch {
		case id != nil:
			cands = append(cands, store.FairCandidate{ID: *id, Priority: priority, Key: *key, Kind: *kind})
		case key == nil:
			last = n
		default:
			served[*key] = store.FairKey{Served: n, Used: used, Weight: weight}
			if *key != "" {
				keys = append(keys, *key)
			}
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, out, err
	}

	picked := store.FairPick(cands, served, len(cands), kindLeft) // all, in order: the claim takes the first limit it can
	var jobs []*hoppertype.JobRow
	if len(picked) > 0 {
		ids := make([]string, len(picked))
		for i, c := range picked {
			ids[i] = c.ID
		}
		rs, err := tx.Query(ctx, s.sql(fairClaimSQL), at, p.Queue, limit, p.WorkerID, micros(p.LeaseDuration), ids)
		if err != nil {
			return nil, out, err
		}
		if jobs, err = scanJobs(rs); err != nil {
			return nil, out, err
		}
	}
	// The keys served, by the jobs claimed (a chosen job another claim took is not served).
	claimed := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		claimed[j.ID] = true
	}
	var took []store.FairCandidate
	for _, c := range picked {
		if claimed[c.ID] {
			took = append(took, c)
		}
	}
	read, seen := map[string]int{}, map[string]bool{}
	for _, c := range cands {
		if !seen[c.ID] {
			seen[c.ID] = true
			read[c.Key]++
		}
	}
	var idle []string
	for _, k := range keys {
		if read[k] == 0 {
			idle = append(idle, k)
		}
	}
	if writes := store.FairServed(took, idle, served, last); len(writes) > 0 {
		sort.Slice(writes, func(a, b int) bool { return writes[a].Key < writes[b].Key })
		names, vals, used := make([]string, len(writes)), make([]int64, len(writes)), make([]int32, len(writes))
		for i, w := range writes {
			names[i], vals[i], used[i] = w.Key, w.Served, int32(w.Used)
		}
		if _, err := tx.Exec(ctx, s.sql(fairServeSQL), p.Queue, names, vals, used); err != nil {
			return nil, out, err
		}
	}
	for _, c := range took {
		read[c.Key]--
	}
	for _, k := range keys {
		if read[k] <= 0 { // every job read of it was taken, or there were none: maybe none is left
			out.drop = append(out.drop, k)
		}
	}
	return jobs, out, nil
}

// dropFairKeys removes from queue's keys those of drop none of whose jobs is queued, one
// statement each (each locks one key). It runs after the claim committed: a failure must not
// fail the claim, whose jobs are the caller's now. A key it leaves behind costs the next
// claims a read, and the next claim that reads it tries again.
func (s *Store) dropFairKeys(ctx context.Context, queue string, drop []string) {
	for _, k := range drop {
		if _, err := s.pool.Exec(ctx, s.sql(fairDropSQL), queue, k); err != nil {
			return
		}
	}
}
