package postgres

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

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

// fairAhead is how far a claimer claims ahead in a queue with fairness keys (store.Hold.FairAhead):
// for the jobs that end within 20 ms. A process's fair claims of a queue run one at a time
// (fairQueues.claiming), so its keyed flood runs at about a claim's jobs per round trip, and
// small claims would hold it back; unlike SQLite's, the claims do not hold up a quiet key's
// enqueue. Measured (hopper bench --scenario tenants: a 100,000-job flood beside nine keys of
// a job a second, 20 workers; the quiet keys' p99 beside the flood over their p99 without it,
// and the flood's jobs/s): 5 ms 0.87-1.12x, 4,900/s; 10 ms 0.71-1.05x, 7,400-10,700/s; 20 ms
// 0.89-1.14x, 12,100-12,800/s; a whole round trip's ends (up to 1,000 jobs) 3.3-5.8x,
// 19,000-21,000/s.
const fairAhead = 20 * time.Millisecond

// fairClaimSQL claims the first $3 of the jobs $6, in that order, that are still queued and not
// locked by another claim. Claims that run at once read the same jobs and choose alike: each
// takes the next ones in the fair order that the others did not take, instead of coming back
// short. Parameters as claimUncappedSQL's.
//
// Each id is looked up, and locked, by a subquery of its own (LATERAL … LIMIT 1, which the
// planner cannot merge into a join), in the order of $6 (a function scan's, which the nested
// loop keeps: no sort), until $3 are locked. A join of $6 with jobs was planned, under
// statistics older than a flood (a fresh table, or one whose last ANALYZE saw a quiet queue:
// one queued job estimated), as a hash join of every queued job of the queue: 140–290 ms a
// claim behind 100,000 (auto_explain; TestFairClaimPlanWithAFlood). The queue is compared in a
// collation of no index's (COLLATE "C"), so that only the primary key serves the look-up: under
// the same statistics the planner otherwise walked jobs_fair under the queue for each id.
const fairClaimSQL = `WITH picked AS MATERIALIZED (SELECT x.id FROM unnest($6::text[]) AS c(id)
	CROSS JOIN LATERAL (SELECT j.id FROM {schema}.jobs j WHERE j.id = c.id AND j.state = 'queued' AND j.queue COLLATE "C" = $2
		LIMIT 1 FOR UPDATE SKIP LOCKED) x
	LIMIT $3)` + claimUpdate

// The fair claim's writes to the queue's keys, sent with its COMMIT: first the keys it served
// and those it may remove are locked, in name order, so that claims lock them in one order
// and never deadlock ($1 queue, $2 keys); then the keys it served are written with when ($2
// keys, $3 their served, $4 the turns they used of their round); then each key $2 none of
// whose jobs is queued any more (the claim's own jobs are running by then) is removed, one
// statement a key (the key a range of one for the look-up, as in byKey: = estimates, in the
// generic plan a prepared statement gets, that a flooding key's statistics hold for every key,
// and a whole-table scan finds the first match soonest; and a statement of all the keys at once
// walked the whole queue's part of jobs_fair for each, filtering by key: 100–190 ms a claim
// behind a 20,000-job flood; TestFairDropPlanWithAFlood).
const (
	fairLockSQL = `SELECT fairness_key FROM {schema}.fair_keys WHERE queue = $1 AND fairness_key = ANY($2::text[])
	ORDER BY fairness_key FOR UPDATE`
	fairServeSQL = `INSERT INTO {schema}.fair_keys AS f (queue, fairness_key, served, used)
	SELECT $1, t.k, t.s, t.u FROM unnest($2::text[], $3::bigint[], $4::int[]) AS t(k, s, u)
	ON CONFLICT (queue, fairness_key) DO UPDATE SET served = excluded.served, used = excluded.used`
	fairDropSQL = `DELETE FROM {schema}.fair_keys WHERE queue = $1 AND fairness_key = $2 AND fairness_key <> ''
	AND NOT EXISTS (SELECT 1 FROM {schema}.jobs WHERE state = 'queued' AND queue = $1
		AND fairness_key >= $2 AND fairness_key <= $2)`
)

// fairRead is what fairReadSQL read: the candidates, the keys read (not "") with their rows,
// and the queue's largest served.
type fairRead struct {
	cands  []store.FairCandidate
	served map[string]store.FairKey
	keys   []string
	last   int64
}

// queueFairRead adds the fair claim's read of up to limit jobs of queue, of the kinds asked
// for (empty: any) but the disabled ones, to b; readFair reads its result.
func (s *Store) queueFairRead(b *pgx.Batch, queue string, limit int, kinds []string) {
	b.Queue(s.sql(fairReadSQL), store.FairKeysPerClaim(limit), queue, limit, kinds)
}

func readFair(br pgx.BatchResults) (*fairRead, error) {
	rs, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := &fairRead{served: map[string]store.FairKey{}}
	for rs.Next() {
		var id, key, kind *string
		var priority, used, weight int
		var n int64
		if err := rs.Scan(&id, &priority, &key, &kind, &n, &used, &weight); err != nil {
			return nil, err
		}
		switch {
		case id != nil:
			out.cands = append(out.cands, store.FairCandidate{ID: *id, Priority: priority, Key: *key, Kind: *kind})
		case key == nil:
			out.last = n
		default:
			out.served[*key] = store.FairKey{Served: n, Used: used, Weight: weight}
			if *key != "" {
				out.keys = append(out.keys, *key)
			}
		}
	}
	return out, rs.Err()
}

// claimFair is the fair claim of up to limit jobs of queue p.Queue (store.FairPick) in tx, from
// what claimCapped's first round trip read (read: O(limit·(store.FairKeysPerClaim(limit)+2))
// index entries), within the capped kinds' free slots (caps.KindLimits) and the limits per key
// (caps.KeyLimits, applied to the candidates before the pick: store.KeyLeft, returned with
// what the claim spent of it), starting them at at, the time (now) the caps were read at. It
// adds to after, which goes with COMMIT, the writes of when it served each key, of the
// buckets per key, and the removal of the keys read none of whose jobs may be queued any more.
func (s *Store) claimFair(ctx context.Context, tx sqlConn, p *store.ClaimParams, limit int, caps *store.CapsLeft,
	read *fairRead, at any, now time.Time, after *pgx.Batch) ([]*hoppertype.JobRow, *store.KeyLeft, error) {
	kindLeft := caps.KindLimits(limit)
	cands, served, keys := read.cands, read.served, read.keys

	// The limits per key leave each key its free slots and starts (keylimits.go).
	pickFrom := cands
	var keyLeft *store.KeyLeft
	if len(caps.KeyLimits) > 0 {
		var err error
		if keyLeft, err = s.loadKeyLeft(ctx, tx, p.Queue, caps.KeyLimits, cands, now); err != nil {
			return nil, nil, err
		}
		pickFrom = keyLeft.Bound(cands)
	}
	takable := map[string]int{} // candidates per key the claim may take
	for _, c := range pickFrom {
		takable[c.Key]++
	}
	picked := store.FairPick(pickFrom, served, len(pickFrom), kindLeft) // all, in order: the claim takes the first limit it can
	var jobs []*hoppertype.JobRow
	if len(picked) > 0 {
		ids := make([]string, len(picked))
		for i, c := range picked {
			ids[i] = c.ID
		}
		rs, err := tx.Query(ctx, s.sql(fairClaimSQL), at, p.Queue, limit, p.WorkerID, micros(p.LeaseDuration), ids)
		if err != nil {
			return nil, nil, err
		}
		if jobs, err = scanJobs(rs); err != nil {
			return nil, nil, err
		}
		store.SortPicked(jobs, picked)
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
	readOf, seen := map[string]int{}, map[string]bool{}
	for _, c := range cands {
		if !seen[c.ID] {
			seen[c.ID] = true
			readOf[c.Key]++
		}
	}
	var idle []string
	for _, k := range keys {
		if takable[k] == 0 { // none of its jobs read could be taken: not even at its cap per key
			idle = append(idle, k)
		}
	}
	for _, c := range took {
		readOf[c.Key]--
	}
	var drop []string
	for _, k := range keys {
		if readOf[k] <= 0 { // every job read of it was taken, or there were none: maybe none is left
			drop = append(drop, k)
		}
	}
	writes := store.FairServed(took, idle, served, read.last)
	if len(writes) > 0 || len(drop) > 0 {
		lock := make([]string, 0, len(writes)+len(drop))
		for _, w := range writes {
			lock = append(lock, w.Key)
		}
		lock = append(lock, drop...)
		sort.Strings(lock)
		after.Queue(s.sql(fairLockSQL), p.Queue, slices.Compact(lock))
	}
	if len(writes) > 0 {
		sort.Slice(writes, func(a, b int) bool { return writes[a].Key < writes[b].Key })
		names, vals, used := make([]string, len(writes)), make([]int64, len(writes)), make([]int32, len(writes))
		for i, w := range writes {
			names[i], vals[i], used[i] = w.Key, w.Served, int32(w.Used)
		}
		after.Queue(s.sql(fairServeSQL), p.Queue, names, vals, used)
	}
	for _, k := range drop {
		after.Queue(s.sql(fairDropSQL), p.Queue, k)
	}
	if keyLeft != nil {
		keyLeft.Spend(jobs)
		s.queueKeyBucketWrites(after, keyLeft, limit, now)
	}
	return jobs, keyLeft, nil
}

// The reads and writes of the limits per key (store.KeyLeft): the running jobs of keys $1 (a
// range of jobs_running_keyed per key), the stored buckets of keys $3 under the limit of scope
// $1 and name $2; a bucket written, one deleted, and up to $4 of a limit's buckets last written
// at $3 or before (full again) deleted.
const (
	keyRunningSQL = `SELECT fairness_key, queue, kind, count(*)::int FROM {schema}.jobs
		WHERE state = 'running' AND fairness_key IS NOT NULL AND fairness_key = ANY($1::text[])
		GROUP BY fairness_key, queue, kind`
	keyBucketsSQL = `SELECT fairness_key, tokens, at FROM {schema}.key_buckets
		WHERE scope = $1 AND name = $2 AND fairness_key = ANY($3::text[])`
	keyBucketPutSQL = `INSERT INTO {schema}.key_buckets (scope, name, fairness_key, tokens, at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::timestamptz[])
		ON CONFLICT (scope, name, fairness_key) DO UPDATE SET tokens = excluded.tokens, at = excluded.at`
	keyBucketDropSQL = `DELETE FROM {schema}.key_buckets b USING unnest($1::text[], $2::text[], $3::text[]) AS d(scope, name, k)
		WHERE b.scope = d.scope AND b.name = d.name AND b.fairness_key = d.k`
	keyBucketSweepSQL = `DELETE FROM {schema}.key_buckets WHERE (scope, name, fairness_key) IN (
		SELECT scope, name, fairness_key FROM {schema}.key_buckets WHERE scope = $1 AND name = $2 AND at <= $3
		ORDER BY at LIMIT $4 FOR UPDATE SKIP LOCKED)`
)

// loadKeyLeft reads, in the claim's transaction and after its locks, the running jobs and the
// stored buckets of the candidates' keys under the limits per key that apply: one round trip.
func (s *Store) loadKeyLeft(ctx context.Context, tx sqlConn, queue string, limits []store.KeyLimit, cands []store.FairCandidate,
	now time.Time) (*store.KeyLeft, error) {
	keys := store.KeysOf(cands)
	if len(keys) == 0 {
		return store.NewKeyLeft(queue, limits, nil, nil, now), nil
	}
	b := &pgx.Batch{}
	var rated []store.KeyLimit
	capped := false
	for _, l := range limits {
		capped = capped || l.Cap > 0
		if !l.Rate.IsZero() {
			rated = append(rated, l)
		}
	}
	if capped {
		b.Queue(s.sql(keyRunningSQL), keys)
	}
	for _, l := range rated {
		b.Queue(s.sql(keyBucketsSQL), string(l.Scope), l.Name, keys)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	var running []store.KeyRunning
	var stored []store.KeyBucket
	if capped {
		rs, err := br.Query()
		if err != nil {
			return nil, err
		}
		if running, err = pgx.CollectRows(rs, func(r pgx.CollectableRow) (store.KeyRunning, error) {
			var k store.KeyRunning
			return k, r.Scan(&k.Key, &k.Queue, &k.Kind, &k.Running)
		}); err != nil {
			return nil, err
		}
	}
	for _, l := range rated {
		rs, err := br.Query()
		if err != nil {
			return nil, err
		}
		got, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (store.KeyBucket, error) {
			k := store.KeyBucket{Scope: l.Scope, Name: l.Name}
			return k, r.Scan(&k.Key, &k.Tokens, &k.At)
		})
		if err != nil {
			return nil, err
		}
		stored = append(stored, got...)
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	return store.NewKeyLeft(queue, limits, running, stored, now), nil
}

// writeKeyBuckets writes back, in the claim's transaction, the buckets per key the claim took
// starts from, deletes those it read full again, and sweeps up to store.KeyBucketSweep(limit)
// rows of each per-key rate limit last written a period or more ago: one round trip, none when
// there is nothing to write.
func (s *Store) writeKeyBuckets(ctx context.Context, tx sqlConn, kl *store.KeyLeft, limit int, now time.Time) error {
	b := &pgx.Batch{}
	s.queueKeyBucketWrites(b, kl, limit, now)
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// queueKeyBucketWrites adds writeKeyBuckets' statements to b.
func (s *Store) queueKeyBucketWrites(b *pgx.Batch, kl *store.KeyLeft, limit int, now time.Time) {
	put, drop := kl.Writes()
	if len(put) > 0 {
		scopes, names, keys := make([]string, len(put)), make([]string, len(put)), make([]string, len(put))
		tokens, ats := make([]float64, len(put)), make([]time.Time, len(put))
		for i, k := range put {
			scopes[i], names[i], keys[i], tokens[i], ats[i] = string(k.Scope), k.Name, k.Key, k.Tokens, k.At
		}
		b.Queue(s.sql(keyBucketPutSQL), scopes, names, keys, tokens, ats)
	}
	if len(drop) > 0 {
		scopes, names, keys := make([]string, len(drop)), make([]string, len(drop)), make([]string, len(drop))
		for i, k := range drop {
			scopes[i], names[i], keys[i] = string(k.Scope), k.Name, k.Key
		}
		b.Queue(s.sql(keyBucketDropSQL), scopes, names, keys)
	}
	for _, l := range kl.RateLimits() {
		b.Queue(s.sql(keyBucketSweepSQL), string(l.Scope), l.Name, now.Add(-l.Rate.Period), store.KeyBucketSweep(limit))
	}
}
