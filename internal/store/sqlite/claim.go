package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// claimSQL moves the chosen queued jobs of one queue to running. SQLite has one writer, so
// the candidates' LIMITs are exact, and so are the fleet-wide caps counted in the same
// transaction.
const claimSQL = `UPDATE jobs SET
	state = 'running', attempt = attempt + 1, token = token + 1, version = version + 1,
	worker_id = ?1, lease_expires_at = ?2, heartbeat_at = ?3, started_at = ?3, updated_at = ?3,
	last_actor = 'worker', last_reason = 'claim', last_outcome = NULL, last_stack = NULL
WHERE id IN (%s)
RETURNING ` + jobColumns

// candidateSQL picks the best queued jobs of queue ?4 (priority, then age). A paused queue
// yields nothing; a job whose group has a running job waits, and only the oldest unfinished
// job of a group is eligible (in order, even while an older one waits for a retry).
//
// Limits are written "LIMIT +?n", not "LIMIT ?n": with a bare parameter SQLite re-prepares
// the statement every time the limit is rebound (about 10× the cost of the claim itself).
//
// fairCandidateSQL is the same with the job's fairness key and kind, for the fair claim.
const (
	candidateSQL     = `SELECT j.id, j.priority` + candidateFrom
	fairCandidateSQL = `SELECT j.id, j.priority, coalesce(j.fairness_key, ''), j.kind` + candidateFrom
)

const candidateFrom = ` FROM jobs j
	WHERE j.state = 'queued' AND j.queue = ?4 %s
	  AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = ?4 AND q.paused = 1)
	  AND (j.group_key IS NULL OR NOT EXISTS (
	        SELECT 1 FROM jobs g WHERE g.group_key = j.group_key
	        AND g.state IN ('running', 'queued', 'scheduled', 'suspended') AND (g.state = 'running' OR g.id < j.id)))
	ORDER BY j.priority DESC, j.id
	LIMIT +%s`

// JobClaim claims up to params.Limit jobs, within the queue's and the kinds' fleet-wide caps
// and rate limits, skipping the jobs of disabled kinds.
func (s *Store) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hoppertype.JobRow, hold store.Hold, err error) {
	if p.Limit <= 0 {
		return nil, hold, nil
	}
	var restricted, fair bool
	var keyLeft *store.KeyLeft
	// The claim when no kind is capped, rate-limited or disabled, the reads of the settings
	// that apply, and the writes of the rate limits' buckets: each prepared once.
	fast, fastExtra := claimQuery(p.Kinds, nil, nil)
	queries := []string{fast, queueCapSQL, queueRunningSQL, kindRulesSQL, writeQueueBucketSQL, writeKindBucketSQL, fairKeyedSQL}
	err = s.write(ctx, queries, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now() // in the transaction: a queued write must not back-date its claim
		fixed := []any{p.WorkerID, micros(now.Add(p.LeaseDuration)), micros(now), p.Queue}
		c, disabled, err := loadCaps(ctx, stmts[1:4], p, now)
		if err != nil {
			return err
		}
		asked := p.Limit
		if c.Apply() || len(disabled) > 0 {
			asked, restricted = p.Limit-max(p.Ahead, 0), true
		}
		if limit := c.Limit(asked); limit > 0 {
			// A queue with fairness keys first: the first-in, first-out claim takes nothing
			// from it, but walks every queued job of it to find that out (its guard does not
			// stop the walk: 3 ms behind 30,000 jobs).
			var keyed bool
			if err := stmts[6].QueryRowContext(ctx, p.Queue).Scan(&keyed); err != nil {
				return err
			}
			if keyed {
				fair = true // its jobs are in the order it picked them (store.SortPicked)
				jobs, keyLeft, err = claimFair(ctx, tx, p, limit, c, disabled, fixed, now)
				if err != nil {
					return err
				}
				return s.claimed(ctx, tx, stmts, p, c, asked, jobs, keyLeft, &hold, now)
			}
			st, extra := stmts[0], fastExtra
			if len(c.KindLeft) > 0 || len(disabled) > 0 {
				var query string
				query, extra = claimQuery(p.Kinds, c.KindLimits(limit), disabled)
				if st, err = tx.PrepareContext(ctx, query); err != nil {
					return err
				}
			}
			rows, err := st.QueryContext(ctx, append(append(fixed, limit), extra...)...)
			if err != nil {
				return err
			}
			if jobs, err = scanJobs(rows); err != nil {
				return err
			}
		}
		return s.claimed(ctx, tx, stmts, p, c, asked, jobs, keyLeft, &hold, now)
	})
	if err != nil {
		return nil, store.Hold{}, fmt.Errorf("claim jobs in queue %q: %w", p.Queue, err)
	}
	if !fair {
		store.SortClaimed(jobs)
	}
	hold.Restricted = restricted
	if fair {
		hold.FairAhead = fairAhead
	}
	return jobs, hold, nil
}

// claimed is what a claim does in its transaction once it has its jobs: it charges the caps
// and rate limits (and those per key, keyLeft, when they applied), says in hold what held the
// claim back, and writes back the buckets (with stmts[4:6]).
func (s *Store) claimed(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt, p *store.ClaimParams, c *store.CapsLeft, asked int,
	jobs []*hoppertype.JobRow, keyLeft *store.KeyLeft, hold *store.Hold, now time.Time) error {
	var err error
	*hold, err = c.Spend(asked, jobs, func(kinds []string) (bool, error) {
		marks := strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",")
		args := []any{p.Queue}
		for _, k := range kinds {
			args = append(args, k)
		}
		var ok bool
		err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND queue = ?
				AND kind IN (`+marks+`))`, args...).Scan(&ok)
		return ok, err
	})
	if err != nil {
		return err
	}
	if keyLeft != nil {
		keyLeft.Hold(hold, asked, len(jobs))
	}
	return writeBuckets(ctx, stmts[4:6], p.Queue, c, now)
}

// Writing back a rate limit's bucket after a claim took starts from it.
const (
	writeQueueBucketSQL = `UPDATE queues SET rate_tokens = ?2, rate_at = ?3 WHERE name = ?1`
	writeKindBucketSQL  = `UPDATE kinds SET rate_tokens = ?2, rate_at = ?3 WHERE kind = ?1`
)

// writeBuckets writes back the buckets the claim took starts from, with the statements of
// writeQueueBucketSQL and writeKindBucketSQL.
func writeBuckets(ctx context.Context, stmts []*sql.Stmt, queue string, c *store.CapsLeft, now time.Time) error {
	qb, kb := c.Charged()
	if qb != nil {
		if _, err := stmts[0].ExecContext(ctx, queue, qb.Tokens, micros(now)); err != nil {
			return err
		}
	}
	for kind, b := range kb {
		if _, err := stmts[1].ExecContext(ctx, kind, b.Tokens, micros(now)); err != nil {
			return err
		}
	}
	return nil
}

// claimQuery builds the claim for the kinds asked for, given the capped kinds' free slots
// (kindLeft) and the disabled kinds, whose jobs it leaves. Without capped kinds it is one
// ordered, limited scan; with them, each capped kind gets its own scan limited to its free
// slots, merged in claim order. Parameters ?1–?5 are fixed (worker, lease expiry, now, queue,
// limit); extra holds ?6 on. It takes nothing from a queue with fairness keys (unkeyedGuard):
// JobClaim then takes the fair claim.
func claimQuery(kinds []string, kindLeft map[string]int, disabled []string) (string, []any) {
	var extra []any
	param := func(v any) string {
		extra = append(extra, v)
		return fmt.Sprintf("?%d", 5+len(extra))
	}
	in := func(vals []string) string {
		marks := make([]string, len(vals))
		for i, v := range vals {
			marks[i] = param(v)
		}
		return strings.Join(marks, ",")
	}
	filter := unkeyedGuard + kindFilter(kinds, disabled, in)
	if len(kindLeft) == 0 {
		return fmt.Sprintf(claimSQL, "SELECT id FROM ("+fmt.Sprintf(candidateSQL, filter, "?5")+")"), extra
	}
	capped := make([]string, 0, len(kindLeft))
	for k := range kindLeft {
		capped = append(capped, k)
	}
	sort.Strings(capped)
	arms := []string{"SELECT * FROM (" + fmt.Sprintf(candidateSQL, filter+" AND j.kind NOT IN ("+in(capped)+")", "?5") + ")"}
	for _, k := range capped {
		if kindLeft[k] > 0 {
			arm := fmt.Sprintf(candidateSQL, unkeyedGuard+" AND j.kind = "+param(k), param(kindLeft[k]))
			arms = append(arms, "SELECT * FROM ("+arm+")")
		}
	}
	union := "SELECT id FROM (" + strings.Join(arms, " UNION ALL ") + ") ORDER BY priority DESC, id LIMIT +?5"
	return fmt.Sprintf(claimSQL, union), extra
}

// unkeyedGuard keeps the first-in, first-out claim from a queue with fairness keys.
const unkeyedGuard = `AND NOT EXISTS (SELECT 1 FROM fair_keys f WHERE f.queue = ?4 AND f.fairness_key <> '')`

// kindFilter is the candidates' filter for the kinds asked for (none: every kind) and the
// disabled kinds, whose jobs it leaves; in makes the parameters of a list of values.
func kindFilter(kinds, disabled []string, in func([]string) string) string {
	var filter string
	if len(kinds) > 0 {
		filter = " AND j.kind IN (" + in(kinds) + ")"
	}
	if len(disabled) > 0 {
		filter += " AND j.kind NOT IN (" + in(disabled) + ")"
	}
	return filter
}

// The reads of the settings that apply to a claim: the queue's cap, rate limit and running
// jobs, and every kind's settings with, for a capped kind that is not disabled, its free slots.
const (
	queueCapSQL = `SELECT max_running, rate_limit, rate_period_us, rate_tokens, rate_at, cap_per_key, rate_per_key_limit,
		rate_per_key_period_us FROM queues WHERE name = ?`
	queueRunningSQL = `SELECT count(*) FROM jobs WHERE state = 'running' AND queue = ?`
	kindRulesSQL    = `SELECT k.kind, k.disabled, CASE WHEN k.disabled OR k.max_running IS NULL THEN NULL
		ELSE k.max_running - (SELECT count(*) FROM jobs j WHERE j.state = 'running' AND j.kind = k.kind) END,
		k.rate_limit, k.rate_period_us, k.rate_tokens, k.rate_at, k.cap_per_key, k.rate_per_key_limit, k.rate_per_key_period_us
		FROM kinds k ORDER BY k.kind`
)

// storedBucket is a rate limit's bucket as read from a row, valid when the row has one.
type storedBucket struct {
	limit, period, at sql.NullInt64
	tokens            sql.NullFloat64
}

func (b *storedBucket) dest() []any { return []any{&b.limit, &b.period, &b.tokens, &b.at} }

func (b *storedBucket) bucket() (store.Bucket, bool) {
	if !b.limit.Valid || !b.period.Valid || !b.tokens.Valid || !b.at.Valid {
		return store.Bucket{}, false
	}
	return store.Bucket{Rate: store.Rate{Limit: int(b.limit.Int64), Period: time.Duration(b.period.Int64) * time.Microsecond},
		Tokens: b.tokens.Float64, At: fromMicros(b.at.Int64)}, true
}

// storedKeyLimit is a row's limits per key (store.KeyLimit).
type storedKeyLimit struct{ capPerKey, rateLimit, ratePeriod sql.NullInt64 }

func (l *storedKeyLimit) dest() []any { return []any{&l.capPerKey, &l.rateLimit, &l.ratePeriod} }

func (l *storedKeyLimit) limit(scope store.LimitScope, name string) store.KeyLimit {
	out := store.KeyLimit{Scope: scope, Name: name, Cap: int(l.capPerKey.Int64)}
	if l.rateLimit.Valid && l.ratePeriod.Valid {
		out.Rate = store.Rate{Limit: int(l.rateLimit.Int64), Period: time.Duration(l.ratePeriod.Int64) * time.Microsecond}
	}
	return out
}

// loadCaps reads, in the claim's transaction, what the caps and rate limits that apply to the
// claim leave it (buckets refilled to now) and the disabled kinds it would otherwise take (by
// name), with the statements of queueCapSQL, queueRunningSQL and kindRulesSQL. A disabled
// kind's settings are left out: none of its jobs can be taken, so they cannot hold the claim
// short.
func loadCaps(ctx context.Context, stmts []*sql.Stmt, p *store.ClaimParams, now time.Time) (*store.CapsLeft, []string, error) {
	c := store.NoCaps()
	var qmax sql.NullInt64
	var rate storedBucket
	var perKey storedKeyLimit
	err := stmts[0].QueryRowContext(ctx, p.Queue).Scan(append(append([]any{&qmax}, rate.dest()...), perKey.dest()...)...)
	if err != nil && err != sql.ErrNoRows {
		return nil, nil, err
	}
	if qmax.Valid {
		var running int
		if err := stmts[1].QueryRowContext(ctx, p.Queue).Scan(&running); err != nil {
			return nil, nil, err
		}
		c.QueueCap(int(qmax.Int64), running)
	}
	if b, ok := rate.bucket(); ok {
		c.QueueRateAt(b, now)
	}
	c.KeyLimit(perKey.limit(store.LimitQueue, p.Queue))
	disabled, err := loadKindRules(ctx, stmts[2], p.Kinds, c, now)
	return c, disabled, err
}

// loadKindRules reads the kinds' settings for a claim of kinds (nil: any kind): it bounds c by
// the capped and rate-limited kinds and returns the disabled ones.
func loadKindRules(ctx context.Context, st *sql.Stmt, kinds []string, c *store.CapsLeft, now time.Time) ([]string, error) {
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	wanted := map[string]bool{}
	for _, k := range kinds {
		wanted[k] = true
	}
	var disabled []string
	for rows.Next() {
		var kind string
		var off bool
		var left sql.NullInt64
		var rate storedBucket
		var perKey storedKeyLimit
		if err := rows.Scan(append(append([]any{&kind, &off, &left}, rate.dest()...), perKey.dest()...)...); err != nil {
			return nil, err
		}
		switch {
		case len(wanted) > 0 && !wanted[kind]: // the claim takes no job of it anyway
		case off:
			disabled = append(disabled, kind)
		default:
			if left.Valid {
				c.KindCap(kind, int(left.Int64), 0)
			}
			if b, ok := rate.bucket(); ok {
				c.KindRateAt(kind, b, now)
			}
			c.KeyLimit(perKey.limit(store.LimitKind, kind))
		}
	}
	return disabled, rows.Err()
}
