package postgres

import (
	"context"
	"fmt"
	"sort"

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
// key. It locks nothing.
var fairReadSQL = `WITH keys AS MATERIALIZED (
	SELECT fairness_key AS k, served FROM {schema}.fair_keys WHERE queue = $2 AND fairness_key <> ''
	ORDER BY served, fairness_key LIMIT $1)
SELECT c.id, c.priority, c.fkey, c.kind, 0::bigint FROM keys CROSS JOIN LATERAL (` +
	fmt.Sprintf(fairCandidates, kindFilter("$4")+" AND j.fairness_key = keys.k", "$3") + `) c
UNION ALL SELECT *, 0::bigint FROM (` + fmt.Sprintf(fairCandidates, kindFilter("$4")+" AND j.fairness_key IS NULL", "$3") + `) u
UNION ALL SELECT *, 0::bigint FROM (` + fmt.Sprintf(fairCandidates, kindFilter("$4"), "$3") + `) h
UNION ALL SELECT NULL, 0, k, NULL, served FROM keys
UNION ALL SELECT NULL, 0, '', NULL, served FROM {schema}.fair_keys WHERE queue = $2 AND fairness_key = ''
UNION ALL SELECT NULL, 0, NULL, NULL, coalesce(max(served), 0) FROM {schema}.fair_keys WHERE queue = $2`

// fairClaimSQL claims the first $3 of the jobs $6, in that order, that are still queued and not
// locked by another claim. Claims that run at once read the same jobs and choose alike: each
// takes the next ones in the fair order that the others did not take, instead of coming back
// short. Parameters as claimUncappedSQL's.
const fairClaimSQL = `WITH picked AS MATERIALIZED (SELECT j.id FROM unnest($6::text[]) WITH ORDINALITY AS c(id, n)
	JOIN {schema}.jobs j ON j.id = c.id
	WHERE j.state = 'queued' AND j.queue = $2
	ORDER BY c.n LIMIT $3 FOR UPDATE OF j SKIP LOCKED)` + claimUpdate

// The fair claim's writes to the queue's keys: the keys it served, with when ($1 queue, $2
// keys in name order, so that claims lock them in one order, $3 their served); a key none of
// whose jobs is queued any more, removed.
const (
	fairServeSQL = `INSERT INTO {schema}.fair_keys AS f (queue, fairness_key, served)
	SELECT $1, t.k, t.s FROM unnest($2::text[], $3::bigint[]) AS t(k, s)
	ON CONFLICT (queue, fairness_key) DO UPDATE SET served = excluded.served`
	fairDropSQL = `DELETE FROM {schema}.fair_keys WHERE queue = $1 AND fairness_key = $2 AND fairness_key <> ''
	AND NOT EXISTS (SELECT 1 FROM {schema}.jobs WHERE state = 'queued' AND queue = $1 AND fairness_key = $2)`
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
	served := map[string]int64{}
	var keys []string
	var last int64
	for rs.Next() {
		var id, key, kind *string
		var priority int
		var n int64
		if err := rs.Scan(&id, &priority, &key, &kind, &n); err != nil {
			rs.Close()
			return nil, out, err
		}
		switch {
		case id != nil:
			cands = append(cands, store.FairCandidate{ID: *id, Priority: priority, Key: *key, Kind: *kind})
		case key == nil:
			last = n
		default:
			served[*key] = n
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
	servedKeys, values := store.FairServed(took, idle, last)
	if len(servedKeys) > 0 {
		byName := make([]int, len(servedKeys))
		for i := range byName {
			byName[i] = i
		}
		sort.Slice(byName, func(a, b int) bool { return servedKeys[byName[a]] < servedKeys[byName[b]] })
		names, vals := make([]string, len(byName)), make([]int64, len(byName))
		for i, x := range byName {
			names[i], vals[i] = servedKeys[x], values[x]
		}
		if _, err := tx.Exec(ctx, s.sql(fairServeSQL), p.Queue, names, vals); err != nil {
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
