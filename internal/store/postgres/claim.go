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

// candidates selects and locks the best queued jobs of queue $2: FOR UPDATE SKIP LOCKED with
// a LIMIT takes at most that many rows and never waits for a row another claimer holds. A
// paused queue yields nothing; a job whose group already has a running job waits, and only
// the oldest unfinished job of a group is eligible (in order, even while an older one waits
// for a retry). The group rule is two probes so that each is one index range: "an older
// unfinished job" (jobs_group, stops at the first hit) and "a running job of the group"
// (jobs_group_running, which holds only running grouped jobs; the explicit IS NOT NULL lets
// the planner use it when it hashes the subquery). The first %s adds filters, the second is
// the limit.
const candidates = `SELECT j.id, j.priority FROM {schema}.jobs j
	WHERE j.state = 'queued' AND j.queue = $2 %s
	  AND NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = $2 AND q.paused)
	  AND (j.group_key IS NULL OR (
	        NOT EXISTS (SELECT 1 FROM {schema}.jobs g WHERE g.group_key = j.group_key AND g.id < j.id
	                    AND g.state IN ('running', 'queued', 'scheduled', 'suspended'))
	        AND NOT EXISTS (SELECT 1 FROM {schema}.jobs g WHERE g.group_key = j.group_key
	                    AND g.state = 'running' AND g.group_key IS NOT NULL)))
	ORDER BY j.priority DESC, j.id
	LIMIT %s
	FOR UPDATE OF j SKIP LOCKED`

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
// or a fleet-wide cap applies to the claim (the queue's cap, or a kind it may take that is
// capped or disabled); capsApplySQL, sent in the same round trip, then says so and JobClaim
// takes the capped path, which also leaves the jobs of disabled kinds. So a claim that no cap
// and no disabled kind applies to is the statement it was before kinds could be disabled:
// PostgreSQL plans it anew for every claim, and one more subquery costs a third more
// planning. $6 is the kinds filter.
var (
	uncappedGuard = `AND NOT EXISTS (SELECT 1 FROM {schema}.queues c WHERE c.name = $2 AND c.max_running IS NOT NULL)
	  AND NOT EXISTS (SELECT 1 FROM {schema}.kinds k WHERE (k.max_running IS NOT NULL OR k.disabled)
	                  AND (cardinality($6::text[]) = 0 OR k.kind = ANY($6::text[])))
	  AND (cardinality($6::text[]) = 0 OR j.kind = ANY($6::text[]))`
	claimUncappedSQL = `WITH picked AS MATERIALIZED (` + fmt.Sprintf(candidates, uncappedGuard, "$3") + `)` + claimUpdate
)

const capsApplySQL = `SELECT EXISTS (SELECT 1 FROM {schema}.queues WHERE name = $1 AND max_running IS NOT NULL)
	OR EXISTS (SELECT 1 FROM {schema}.kinds WHERE (max_running IS NOT NULL OR disabled)
	           AND (cardinality($2::text[]) = 0 OR kind = ANY($2::text[])))`

// JobClaim claims up to params.Limit jobs, in claim order, within the fleet-wide caps and
// leaving the jobs of disabled kinds.
func (s *Store) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hoppertype.JobRow, capLimited bool, err error) {
	if p.Limit <= 0 {
		return nil, false, nil
	}
	kinds := p.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	jobs, restricted, err := s.claimUncapped(ctx, p, kinds)
	if err == nil && restricted && len(jobs) == 0 {
		jobs, capLimited, err = s.claimCapped(ctx, p, kinds)
	}
	if err != nil {
		return nil, false, s.wrap(err, "claim jobs in queue %q", p.Queue)
	}
	store.SortClaimed(jobs)
	return jobs, capLimited, nil
}

// claimUncapped runs the uncapped claim and capsApplySQL in one round trip; it reports
// whether a cap or a disabled kind applies to the claim.
func (s *Store) claimUncapped(ctx context.Context, p *store.ClaimParams, kinds []string) ([]*hoppertype.JobRow, bool, error) {
	b := &pgx.Batch{}
	b.Queue(s.sql(claimUncappedSQL), s.nowArg(), p.Queue, p.Limit, p.WorkerID, micros(p.LeaseDuration), kinds)
	b.Queue(s.sql(capsApplySQL), p.Queue, kinds)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rs, err := br.Query()
	if err != nil {
		return nil, false, err
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, false, err
	}
	var restricted bool
	if err := br.QueryRow().Scan(&restricted); err != nil {
		return nil, false, err
	}
	return jobs, restricted, br.Close()
}

// claimCapped claims under fleet-wide caps, exactly even when claims race: it locks the rows
// of the caps that apply (the queue's, then the capped kinds' in name order, so lockers never
// deadlock), counts the running jobs only after holding them (a fresh snapshot that sees
// every claim committed before), and claims within the free slots, leaving the jobs of
// disabled kinds. Only claims sharing a capped queue or kind wait for each other; a claim that
// only a disabled kind applies to locks nothing; all others take the one-statement path.
func (s *Store) claimCapped(ctx context.Context, p *store.ClaimParams, kinds []string) (jobs []*hoppertype.JobRow, capLimited bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	c, err := s.lockCaps(ctx, tx, p.Queue, kinds)
	if err != nil {
		return nil, false, err
	}
	limit, capLimited := c.Limit(p.Limit), c.Limits(p.Limit)
	if limit > 0 {
		query, extra := claimCappedQuery(c.KindLeft)
		args := append([]any{s.nowArg(), p.Queue, limit, p.WorkerID, micros(p.LeaseDuration), kinds}, extra...)
		rs, err := tx.Query(ctx, s.sql(query), args...)
		if err != nil {
			return nil, false, err
		}
		if jobs, err = scanJobs(rs); err != nil {
			return nil, false, err
		}
	}
	return jobs, capLimited, tx.Commit(ctx)
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
	kindFilter := `AND (cardinality($6::text[]) = 0 OR j.kind = ANY($6::text[]))
	  AND j.kind NOT IN (SELECT d.kind FROM {schema}.kinds d WHERE d.disabled)`
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

// The capped path's first round trip: lock the caps that apply (queue first, then kinds by
// name, so lockers never deadlock), then read them with their running counts. A capped kind
// that is disabled is locked too, so it stays disabled until the claim commits, but it limits
// nothing: the scans leave its jobs.
const (
	lockQueueCapSQL = `SELECT 1 FROM {schema}.queues WHERE name = $1 AND max_running IS NOT NULL FOR UPDATE`
	lockKindCapsSQL = `SELECT 1 FROM {schema}.kinds
		WHERE max_running IS NOT NULL AND (cardinality($1::text[]) = 0 OR kind = ANY($1::text[]))
		ORDER BY kind FOR UPDATE`
	capsSQL = `SELECT 'queue', q.name, q.max_running, count(r.id)
	FROM {schema}.queues q LEFT JOIN {schema}.jobs r ON r.state = 'running' AND r.queue = q.name
	WHERE q.name = $1 AND q.max_running IS NOT NULL
	GROUP BY q.name, q.max_running
	UNION ALL
	SELECT 'kind', k.kind, k.max_running, count(r.id)
	FROM {schema}.kinds k LEFT JOIN {schema}.jobs r ON r.state = 'running' AND r.kind = k.kind
	WHERE k.max_running IS NOT NULL AND NOT k.disabled AND (cardinality($2::text[]) = 0 OR k.kind = ANY($2::text[]))
	GROUP BY k.kind, k.max_running`
)

// lockCaps takes the cap locks and counts the running jobs, in one round trip. The statements
// of a batch run one after the other, so the count's snapshot is taken once the locks are
// held and sees every claim committed before.
func (s *Store) lockCaps(ctx context.Context, tx pgx.Tx, queue string, kinds []string) (*store.CapsLeft, error) {
	b := &pgx.Batch{}
	b.Queue(s.sql(lockQueueCapSQL), queue)
	b.Queue(s.sql(lockKindCapsSQL), kinds)
	b.Queue(s.sql(capsSQL), queue, kinds)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	rs, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	c := store.NoCaps()
	for rs.Next() {
		var scope, name string
		var limit int32
		var running int64
		if err := rs.Scan(&scope, &name, &limit, &running); err != nil {
			return nil, err
		}
		left := max(int(limit)-int(running), 0)
		if scope == string(store.LimitQueue) {
			c.QueueLeft = left
			continue
		}
		if c.KindLeft == nil {
			c.KindLeft = map[string]int{}
		}
		c.KindLeft[name] = left
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	rs.Close()
	return c, br.Close()
}
