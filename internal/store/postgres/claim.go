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

// candidates selects and locks the best queued jobs of queue $2: FOR UPDATE SKIP LOCKED with
// a LIMIT takes at most that many rows and never waits for a row another claimer holds. A
// paused queue yields nothing; a job whose group already has a running job waits, and only
// the oldest unfinished job of a group is eligible (in order, even while an older one waits
// for a retry). The group rule is two probes so that each is one index range: "an older
// unfinished job" (jobs_group, stops at the first hit) and "a running job of the group"
// (jobs_group_running, which holds only running grouped jobs; the explicit IS NOT NULL lets
// the planner use it when it hashes the subquery). The first %s adds filters, the second is
// the limit.
//
// fairCandidates selects the same jobs, with their fairness keys and kinds, and locks none:
// the fair claim (fair.go) reads more jobs than it takes, and locks those it takes.
const (
	candidates     = `SELECT j.id, j.priority` + candidatesFrom + "\n\tFOR UPDATE OF j SKIP LOCKED"
	fairCandidates = `SELECT j.id, j.priority, coalesce(j.fairness_key, '') AS fkey, j.kind` + candidatesFrom
)

const candidatesFrom = ` FROM {schema}.jobs j
	WHERE j.state = 'queued' AND j.queue = $2 %s
	  AND NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = $2 AND q.paused)
	  AND (j.group_key IS NULL OR (
	        NOT EXISTS (SELECT 1 FROM {schema}.jobs g WHERE g.group_key = j.group_key AND g.id < j.id
	                    AND g.state IN ('running', 'queued', 'scheduled', 'suspended'))
	        AND NOT EXISTS (SELECT 1 FROM {schema}.jobs g WHERE g.group_key = j.group_key
	                    AND g.state = 'running' AND g.group_key IS NOT NULL)))
	ORDER BY j.priority DESC, j.id
	LIMIT %s`

// claimUpdate moves the locked set "picked" to running: "UPDATE … FROM" the CTE, not
// "WHERE id IN (SELECT … LIMIT)", whose subquery may be run again and return other rows.
// Parameters: $1 now, $2 queue, $3 limit, $4 worker, $5 lease in µs.
const claimUpdate = `, clk AS (SELECT coalesce($1::timestamptz, now()) AS now)
UPDATE {schema}.jobs j SET
	state = 'running', attempt = j.attempt + 1, token = j.token + 1, version = j.version + 1,
	worker_id = $4, lease_expires_at = clk.now + $5 * interval '1 microsecond', heartbeat_at = clk.now,
	started_at = clk.now, updated_at = clk.now, last_actor = 'worker', last_reason = 'claim',
	last_outcome = NULL, last_stack = NULL
FROM picked, clk
WHERE j.id = picked.id
RETURNING ` + jCols

// The uncapped claim, the common case: one statement. It takes nothing when a kind's setting
// or a fleet-wide cap or rate limit applies to the claim (the queue's, or a kind it may take
// that is capped, rate-limited or disabled); capsApplySQL, sent in the same round trip, then
// says so and JobClaim takes the capped path, which also leaves the jobs of disabled kinds.
// So a claim that no setting applies to is the statement it was before kinds could be
// disabled:
// PostgreSQL plans it anew for every claim, and one more subquery costs a third more
// planning. $6 is the kinds filter. Nor does it take anything from a queue with fairness keys
// (fair.go): capsApplySQL says so too, and JobClaim takes the fair claim.
var (
	uncappedGuard = `AND NOT EXISTS (SELECT 1 FROM {schema}.queues c WHERE c.name = $2
	                  AND (c.max_running IS NOT NULL OR c.rate_limit IS NOT NULL))
	  AND NOT EXISTS (SELECT 1 FROM {schema}.fair_keys f WHERE f.queue = $2 AND f.fairness_key <> '')
	  AND NOT EXISTS (SELECT 1 FROM {schema}.kinds k WHERE (k.max_running IS NOT NULL OR k.disabled OR k.rate_limit IS NOT NULL)
	                  AND (cardinality($6::text[]) = 0 OR k.kind = ANY($6::text[])))
	  AND (cardinality($6::text[]) = 0 OR j.kind = ANY($6::text[]))`
	claimUncappedSQL = `WITH picked AS MATERIALIZED (` + fmt.Sprintf(candidates, uncappedGuard, "$3") + `)` + claimUpdate

	// claimCursorSQL is the uncapped claim from a cursor (cursor.go): priority $7, id $8. It
	// scans three ranges of jobs_claim in claim order, each only for what the ranges before it
	// did not find: the higher priorities, priority $7 from id $8 on, the lower priorities. It
	// leaves out the jobs of priority $7 below id $8, whose index entries the claims before
	// left behind. The higher and lower ranges are empty in a queue of one priority. Each
	// range locks no more jobs than the claim takes: a job locked and left queued would be
	// skipped by a concurrent claim, whose cursor would then pass it unannounced.
	//
	// picked's LIMIT $3 changes nothing it returns (the ranges' limits add up to $3) but what
	// the planner expects of it: it estimates a computed LIMIT such as the later ranges' as a
	// tenth of the rows, and the sum of those estimates made it hash-join the update to a
	// sequential scan of jobs once a backlog of queued jobs had been analyzed
	// (TestClaimPlansWithABacklog).
	claimCursorSQL = `WITH above AS MATERIALIZED (` +
		fmt.Sprintf(candidates, uncappedGuard+` AND j.priority > $7`, "$3") + `),
	at AS MATERIALIZED (` +
		fmt.Sprintf(candidates, uncappedGuard+` AND j.priority = $7 AND j.id >= $8::text`,
			"$3 - (SELECT count(*) FROM above)") + `),
	below AS MATERIALIZED (` +
		fmt.Sprintf(candidates, uncappedGuard+` AND j.priority < $7`,
			"$3 - (SELECT count(*) FROM above) - (SELECT count(*) FROM at)") + `),
	picked AS MATERIALIZED (SELECT id FROM (SELECT id FROM above UNION ALL SELECT id FROM at
		UNION ALL SELECT id FROM below) u LIMIT $3)` + claimUpdate
)

const capsApplySQL = `SELECT EXISTS (SELECT 1 FROM {schema}.queues WHERE name = $1 AND (max_running IS NOT NULL OR rate_limit IS NOT NULL))
	OR EXISTS (SELECT 1 FROM {schema}.kinds WHERE (max_running IS NOT NULL OR disabled OR rate_limit IS NOT NULL)
	           AND (cardinality($2::text[]) = 0 OR kind = ANY($2::text[]))),
	EXISTS (SELECT 1 FROM {schema}.fair_keys WHERE queue = $1 AND fairness_key <> '')`

// JobClaim claims up to params.Limit jobs, in claim order, within the fleet-wide caps and rate
// limits, leaving the jobs of disabled kinds. A queue with fairness keys is claimed in the fair
// order (fair.go).
func (s *Store) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hoppertype.JobRow, hold store.Hold, err error) {
	if p.Limit <= 0 {
		return nil, hold, nil
	}
	kinds := p.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	if s.fair.has(p.Queue) {
		jobs, hold, err = s.claimCapped(ctx, p, kinds, claimProbe)
	} else {
		var restricted, keyed bool
		jobs, restricted, keyed, err = s.claimUncapped(ctx, p, kinds) // in claim order
		if err == nil && (restricted || keyed) && len(jobs) == 0 {
			s.fair.set(p.Queue, keyed)
			jobs, hold, err = s.claimCapped(ctx, p, kinds, claimMode{restricted: restricted, keyed: keyed})
		}
	}
	if err != nil {
		return nil, store.Hold{}, s.wrap(err, "claim jobs in queue %q", p.Queue)
	}
	return jobs, hold, nil
}

// claimMode is what a claim knows of its queue before it locks anything: whether a cap, a rate
// limit or a disabled kind applies (restricted), and whether the queue has fairness keys; or,
// probe, neither, and the capped claim finds out (capsApplySQL) in its first round trip.
type claimMode struct {
	restricted, keyed, probe bool
}

var claimProbe = claimMode{keyed: true, probe: true}

// claimUncapped runs the uncapped claim, from the queue's cursor when it has one, and
// capsApplySQL in one round trip, and returns the jobs in claim order; it reports whether a
// cap, a rate limit or a disabled kind applies to the claim, and whether the queue has
// fairness keys.
func (s *Store) claimUncapped(ctx context.Context, p *store.ClaimParams, kinds []string) (_ []*hoppertype.JobRow, restricted, keyed bool, _ error) {
	kindsKey := strings.Join(kinds, "\x00")
	use := s.cursors.start(p.Queue, kindsKey, s.Now())
	var (
		ok    bool // the claim succeeded and no cap applied: its result may move the cursor
		first *hoppertype.JobRow
	)
	defer func() { s.cursors.done(use, ok, first, s.Now()) }()
	b := &pgx.Batch{}
	if use.from == nil {
		b.Queue(s.sql(claimUncappedSQL), s.nowArg(), p.Queue, p.Limit, p.WorkerID, micros(p.LeaseDuration), kinds)
	} else {
		b.Queue(s.sql(claimCursorSQL), s.nowArg(), p.Queue, p.Limit, p.WorkerID, micros(p.LeaseDuration), kinds,
			use.from.priority, use.from.id)
	}
	b.Queue(s.sql(capsApplySQL), p.Queue, kinds)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rs, err := br.Query()
	if err != nil {
		return nil, false, false, err
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, false, false, err
	}
	if err := br.QueryRow().Scan(&restricted, &keyed); err != nil {
		return nil, false, false, err
	}
	if err := br.Close(); err != nil {
		return nil, false, false, err
	}
	store.SortClaimed(jobs)
	if restricted || keyed {
		s.cursors.forget(p.Queue, kindsKey)
	}
	ok = !restricted && !keyed
	if len(jobs) > 0 {
		first = jobs[0]
	}
	return jobs, restricted, keyed, nil
}

// claimCapped claims under fleet-wide caps and rate limits, exactly even when claims race: it
// locks the rows of the settings that apply (the queue's, then the kinds' in name order, so
// lockers never deadlock), counts the running jobs and refills the rate limits' buckets only
// after holding them (a fresh snapshot that sees every claim committed before), claims within
// the free slots and starts, leaving the jobs of disabled kinds, and writes back what it took
// from the buckets. Only claims sharing a capped or rate-limited queue or kind wait for each
// other; a claim that only a disabled kind applies to locks nothing; all others take the
// one-statement path. In a queue with fairness keys it takes the fair claim within those
// bounds (fair.go). It is three round trips (pipelinedTx): BEGIN, the locks and reads (with
// the fair claim's read); the claim; the writes and COMMIT. Under restrictions it claims
// nothing ahead (p.Ahead). Its jobs are in claim order, or in the fair claim's.
func (s *Store) claimCapped(ctx context.Context, p *store.ClaimParams, kinds []string, mode claimMode) (jobs []*hoppertype.JobRow, hold store.Hold, err error) {
	if mode.keyed {
		done, err := s.fair.claiming(ctx, p.Queue)
		if err != nil {
			return nil, hold, err
		}
		defer done()
	}
	b := &pgx.Batch{}
	if mode.probe {
		b.Queue(s.sql(capsApplySQL), p.Queue, kinds)
	}
	s.queueLockCaps(b, p.Queue, kinds, mode.keyed)
	readFairToo := mode.keyed
	if readFairToo {
		b.Queue(genericPlansSQL)
		s.queueFairRead(b, p.Queue, p.Limit, kinds)
	}
	tx, br, err := s.beginPipelined(ctx, b)
	if err != nil {
		return nil, hold, err
	}
	defer tx.release(ctx)
	c, now, read, err := s.readCapped(br, &mode, readFairToo)
	if err != nil {
		return nil, hold, err
	}
	if mode.probe && !mode.keyed {
		s.fair.set(p.Queue, false)
	}
	asked := p.Limit
	if mode.restricted {
		asked = p.Limit - max(p.Ahead, 0) // nothing ahead under restrictions
	}
	if asked <= 0 {
		return nil, store.Hold{Restricted: true}, nil
	}
	after := &pgx.Batch{} // the writes that go with COMMIT
	var keys *store.KeyLeft
	if limit := c.Limit(asked); limit > 0 {
		// The jobs start at the time the buckets were refilled to, so that starts and buckets
		// share a clock (and a lease does not lose the wait for the locks).
		var at any = s.nowArg()
		if !now.IsZero() {
			at = now
		}
		if mode.keyed {
			jobs, keys, err = s.claimFair(ctx, tx, p, limit, c, read, at, now, after)
		} else {
			jobs, err = s.claimCappedJobs(ctx, tx, p, limit, c.KindLimits(limit), kinds, at)
			store.SortClaimed(jobs)
		}
		if err != nil {
			return nil, hold, err
		}
	}
	hold, err = c.Spend(asked, jobs, func(kinds []string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, s.sql(kindsWaitingSQL), p.Queue, kinds).Scan(&ok)
		return ok, err
	})
	if err != nil {
		return nil, hold, err
	}
	hold.Restricted = mode.restricted
	if mode.keyed {
		hold.FairAhead = fairAhead
	}
	if keys != nil {
		keys.Hold(&hold, asked, len(jobs))
	}
	s.queueBucketWrites(after, p.Queue, c, now)
	if err := tx.commit(ctx, after); err != nil {
		return nil, hold, err
	}
	return jobs, hold, nil
}

// genericPlansSQL makes the rest of a fair claim's transaction run its statements on generic
// plans, planned once per connection: planned anew for every claim, the fair read (a scan of
// each key read, of the unkeyed jobs and of the head) costs more to plan than to run (2–5 ms
// against 0.1–0.7 ms behind a 100,000-job flood). Its generic plan walks jobs_fair for each key
// and jobs_claim for the head, whatever the statistics (TestFairReadPlanWithAFlood).
const genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`

// readCapped reads the results of claimCapped's first round trip: whether restrictions and
// keys apply (when mode probes: mode is updated), the caps, and the fair claim's read (nil
// when the queue is not keyed).
func (s *Store) readCapped(br pgx.BatchResults, mode *claimMode, readFairToo bool) (*store.CapsLeft, time.Time, *fairRead, error) {
	defer br.Close()
	if mode.probe {
		if err := br.QueryRow().Scan(&mode.restricted, &mode.keyed); err != nil {
			return nil, time.Time{}, nil, err
		}
	}
	c, now, err := readLockCaps(br, mode.keyed)
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	var read *fairRead
	if readFairToo {
		if _, err := br.Exec(); err != nil { // genericPlansSQL
			return nil, time.Time{}, nil, err
		}
		if read, err = readFair(br); err != nil {
			return nil, time.Time{}, nil, err
		}
	}
	return c, now, read, br.Close()
}

// claimCappedJobs claims up to limit jobs in tx within the capped kinds' free slots (kindLeft),
// with the query claimCappedQuery builds, starting them at at.
func (s *Store) claimCappedJobs(ctx context.Context, tx sqlConn, p *store.ClaimParams, limit int, kindLeft map[string]int,
	kinds []string, at any) ([]*hoppertype.JobRow, error) {
	query, extra := claimCappedQuery(kindLeft)
	args := append([]any{at, p.Queue, limit, p.WorkerID, micros(p.LeaseDuration), kinds}, extra...)
	rs, err := tx.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, err
	}
	return scanJobs(rs)
}

// kindsWaitingSQL says whether queued jobs of the kinds $2 wait in queue $1 (kinds a cap or
// rate limit let a claim take none of).
const kindsWaitingSQL = `SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE state = 'queued' AND queue = $1 AND kind = ANY($2::text[]))`

// Writing back the rate-limit buckets a claim took starts from, at the time it refilled them.
const (
	writeQueueBucketSQL = `UPDATE {schema}.queues SET rate_tokens = $2, rate_at = $3 WHERE name = $1`
	writeKindBucketsSQL = `UPDATE {schema}.kinds k SET rate_tokens = b.tokens, rate_at = $3
		FROM unnest($1::text[], $2::float8[]) AS b(kind, tokens) WHERE k.kind = b.kind`
)

// writeBuckets writes back, in the claim's transaction, the buckets it took starts from: one
// round trip, none when it took none.
func (s *Store) writeBuckets(ctx context.Context, tx sqlConn, queue string, c *store.CapsLeft, now time.Time) error {
	b := &pgx.Batch{}
	s.queueBucketWrites(b, queue, c, now)
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// queueBucketWrites adds writeBuckets' statements to b.
func (s *Store) queueBucketWrites(b *pgx.Batch, queue string, c *store.CapsLeft, now time.Time) {
	qb, kb := c.Charged()
	if qb != nil {
		b.Queue(s.sql(writeQueueBucketSQL), queue, qb.Tokens, now)
	}
	if len(kb) > 0 {
		names, tokens := make([]string, 0, len(kb)), make([]float64, 0, len(kb))
		for k, bucket := range kb {
			names, tokens = append(names, k), append(tokens, bucket.Tokens)
		}
		b.Queue(s.sql(writeKindBucketsSQL), names, tokens, now)
	}
}

// claimCappedQuery builds the capped claim: without capped kinds one ordered, limited scan;
// with them, each capped kind gets its own scan limited to its free slots, merged in claim
// order. Parameters $1–$6 are claimUncappedSQL's; extra holds $7 on.
//
// Every scan but a capped kind's (never a disabled one: the caps read leaves those out, and
// their locked rows cannot change) leaves the disabled kinds' jobs, read in the statement
// into a hashed subplan. Not "j.kind <> ALL (ARRAY(…))": the planner estimates that from
// j.kind's statistics as if the array held ten unknown kinds, so with few kinds in the table
// it expects almost no row to pass, and scans and sorts the whole table instead of walking
// jobs_claim. A subplan is estimated to pass half.
func claimCappedQuery(kindLeft map[string]int) (string, []any) {
	kindFilter := kindFilter("$6")
	if len(kindLeft) == 0 {
		return `WITH picked AS MATERIALIZED (` + fmt.Sprintf(candidates, kindFilter, "$3") + `)` + claimUpdate, nil
	}
	capped := make([]string, 0, len(kindLeft))
	for k := range kindLeft {
		capped = append(capped, k)
	}
	sort.Strings(capped)
	extra := []any{capped}
	ctes := []string{"arm0 AS MATERIALIZED (" + fmt.Sprintf(candidates, kindFilter+" AND j.kind <> ALL($7::text[])", "$3") + ")"}
	for _, k := range capped {
		if kindLeft[k] <= 0 {
			continue
		}
		extra = append(extra, k, kindLeft[k])
		kp, lp := len(extra)+5, len(extra)+6 // $n of the kind and of its limit
		arm := fmt.Sprintf(candidates, fmt.Sprintf("AND j.kind = $%d", kp), fmt.Sprintf("$%d", lp))
		ctes = append(ctes, fmt.Sprintf("arm%d AS MATERIALIZED (%s)", len(ctes), arm))
	}
	arms := make([]string, len(ctes))
	for i := range ctes {
		arms[i] = fmt.Sprintf("SELECT * FROM arm%d", i)
	}
	picked := "picked AS MATERIALIZED (SELECT id FROM (" + strings.Join(arms, " UNION ALL ") +
		") u ORDER BY priority DESC, id LIMIT $3)"
	return "WITH " + strings.Join(ctes, ", ") + ", " + picked + claimUpdate, extra
}

// kindFilter keeps the jobs of the kinds in the array parameter param (empty: every kind)
// and leaves the disabled kinds' jobs.
func kindFilter(param string) string {
	return `AND (cardinality(` + param + `::text[]) = 0 OR j.kind = ANY(` + param + `::text[]))
	  AND j.kind NOT IN (SELECT d.kind FROM {schema}.kinds d WHERE d.disabled)`
}

// The capped path's first round trip: lock the settings that apply (queue first, then kinds by
// name, so lockers never deadlock), then read them, with the running counts of the caps and the
// time the buckets are refilled to: the injected clock's, else the database's at the read (not
// the transaction's start, which may be long before a lock wait ended, behind the time another
// claim wrote). A capped kind that is disabled is locked too, so it stays disabled until the
// claim commits, but it limits nothing: the scans leave its jobs.
const (
	lockQueueCapSQL = `SELECT name FROM {schema}.queues
		WHERE name = $1 AND (max_running IS NOT NULL OR rate_limit IS NOT NULL
		                     OR ($2 AND (cap_per_key IS NOT NULL OR rate_per_key_limit IS NOT NULL))) FOR UPDATE`
	lockKindCapsSQL = `SELECT kind FROM {schema}.kinds
		WHERE (max_running IS NOT NULL OR rate_limit IS NOT NULL OR ($2 AND (cap_per_key IS NOT NULL OR rate_per_key_limit IS NOT NULL)))
		  AND (cardinality($1::text[]) = 0 OR kind = ANY($1::text[]))
		ORDER BY kind FOR UPDATE`
	capsSQL = `WITH clk AS (SELECT coalesce($3::timestamptz, clock_timestamp()) AS now)
	SELECT 'queue', q.name, q.max_running, count(r.id), q.rate_limit, q.rate_period_us, q.rate_tokens, q.rate_at, clk.now,
		q.cap_per_key, q.rate_per_key_limit, q.rate_per_key_period_us
	FROM {schema}.queues q CROSS JOIN clk
	LEFT JOIN {schema}.jobs r ON q.max_running IS NOT NULL AND r.state = 'running' AND r.queue = q.name
	WHERE q.name = $1 AND (q.max_running IS NOT NULL OR q.rate_limit IS NOT NULL
	                       OR ($4 AND (q.cap_per_key IS NOT NULL OR q.rate_per_key_limit IS NOT NULL)))
	GROUP BY q.name, q.max_running, q.rate_limit, q.rate_period_us, q.rate_tokens, q.rate_at, clk.now
	UNION ALL
	SELECT 'kind', k.kind, k.max_running, count(r.id), k.rate_limit, k.rate_period_us, k.rate_tokens, k.rate_at, clk.now,
		k.cap_per_key, k.rate_per_key_limit, k.rate_per_key_period_us
	FROM {schema}.kinds k CROSS JOIN clk
	LEFT JOIN {schema}.jobs r ON k.max_running IS NOT NULL AND r.state = 'running' AND r.kind = k.kind
	WHERE (k.max_running IS NOT NULL OR k.rate_limit IS NOT NULL
	       OR ($4 AND (k.cap_per_key IS NOT NULL OR k.rate_per_key_limit IS NOT NULL))) AND NOT k.disabled
	  AND (cardinality($2::text[]) = 0 OR k.kind = ANY($2::text[]))
	GROUP BY k.kind, k.max_running, k.rate_limit, k.rate_period_us, k.rate_tokens, k.rate_at, clk.now`
)

// lockCaps takes the locks and reads what the caps and rate limits leave the claim, in one
// round trip, with the time the buckets were refilled to. The statements of a batch run one
// after the other, so the read's snapshot is taken once the locks are held and sees every
// claim committed before. A setting stored between the lock and the read (its row was not
// locked) is left out: it applies from the next claim.
func (s *Store) lockCaps(ctx context.Context, tx pgx.Tx, queue string, kinds []string, keyed bool) (*store.CapsLeft, time.Time, error) {
	b := &pgx.Batch{}
	s.queueLockCaps(b, queue, kinds, keyed)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	c, now, err := readLockCaps(br, keyed)
	if err != nil {
		return nil, time.Time{}, err
	}
	return c, now, br.Close()
}

// queueLockCaps adds lockCaps' statements to b; readLockCaps reads their results.
func (s *Store) queueLockCaps(b *pgx.Batch, queue string, kinds []string, keyed bool) {
	b.Queue(s.sql(lockQueueCapSQL), queue, keyed)
	b.Queue(s.sql(lockKindCapsSQL), kinds, keyed)
	b.Queue(s.sql(capsSQL), queue, kinds, s.nowArg(), keyed)
}

func readLockCaps(br pgx.BatchResults, keyed bool) (*store.CapsLeft, time.Time, error) {
	var locked [2][]string // the queue's row (or none), the kinds' rows
	for i := range locked {
		rs, err := br.Query()
		if err != nil {
			return nil, time.Time{}, err
		}
		if locked[i], err = pgx.CollectRows(rs, pgx.RowTo[string]); err != nil {
			return nil, time.Time{}, err
		}
	}
	rs, err := br.Query()
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rs.Close()
	c := store.NoCaps()
	var now time.Time
	for rs.Next() {
		var scope, name string
		var limit, rateLimit *int32
		var running int64
		var period *int64
		var tokens *float64
		var at *time.Time
		var capPerKey, ratePerKey *int32
		var periodPerKey *int64
		if err := rs.Scan(&scope, &name, &limit, &running, &rateLimit, &period, &tokens, &at, &now,
			&capPerKey, &ratePerKey, &periodPerKey); err != nil {
			return nil, time.Time{}, err
		}
		queueScope := scope == string(store.LimitQueue)
		if queueScope && len(locked[0]) == 0 || !queueScope && !slices.Contains(locked[1], name) {
			continue
		}
		if limit != nil {
			if queueScope {
				c.QueueCap(int(*limit), int(running))
			} else {
				c.KindCap(name, int(*limit), int(running))
			}
		}
		if rateLimit != nil && period != nil && tokens != nil && at != nil {
			bucket := store.Bucket{Rate: store.Rate{Limit: int(*rateLimit), Period: time.Duration(*period) * time.Microsecond},
				Tokens: *tokens, At: *at}
			if queueScope {
				c.QueueRateAt(bucket, now)
			} else {
				c.KindRateAt(name, bucket, now)
			}
		}
		if keyed {
			l := store.KeyLimit{Scope: store.LimitScope(scope), Name: name}
			if capPerKey != nil {
				l.Cap = int(*capPerKey)
			}
			if ratePerKey != nil && periodPerKey != nil {
				l.Rate = store.Rate{Limit: int(*ratePerKey), Period: time.Duration(*periodPerKey) * time.Microsecond}
			}
			c.KeyLimit(l)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, time.Time{}, err
	}
	return c, now, nil
}
