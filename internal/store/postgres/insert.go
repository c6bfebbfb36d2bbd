package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// insertSQL inserts a batch from arrays (one round trip for any number of jobs) and returns
// the new rows followed by the existing jobs that idempotency keys named ($18); $19 holds the
// jobs' result TTLs, $20 their rescue bounds, $21 their merge policies, $22 the wake-ups its
// trigger leaves out (wakes.go), set before the rows go in, $23 their fairness keys, $24 their
// parent failure policies, $25 and $26 their workflows and step names. The same
// statement counts the new jobs in the minute's stats (stats.go).
//
// insertOneSQL is the same statement for one new job and no existing one, its fields as
// scalars ($2–$17, $19–$21, $23–$26) instead of arrays ($18 is empty). PostgreSQL plans a statement
// over arrays anew on every call (the plan for the arrays it is given looks cheaper than a
// generic one), 0.29 ms of the 0.6 ms of a single enqueue; over scalars it keeps one generic
// plan, and a single enqueue, the common case and the one a waiting worker waits for, skips
// the planning.
//
// insertStepsSQL is insertSQL for a batch with steps of a workflow: it also writes each new
// step's row of workflow_steps (migration 0039), which names it in its workflow.
var insertSQL, insertOneSQL, insertStepsSQL = insertStatement(true, false), insertStatement(false, false), insertStatement(true, true)

// insertColumns are the fields of the new jobs: their parameter numbers, types and names.
var insertColumns = []struct{ param, typ, name string }{
	{"2", "text", "id"}, {"3", "text", "kind"}, {"4", "text", "queue"}, {"5", "int", "priority"},
	{"6", "bytea", "args"}, {"7", "text", "headers"}, {"8", "timestamptz", "run_at"},
	{"9", "int", "max_attempts"}, {"10", "bigint", "timeout_us"}, {"11", "text", "retry_policy"},
	{"12", "text", "key"}, {"13", "text", "group_key"}, {"14", "text", "merge_key"},
	{"15", "text", "schedule_id"}, {"16", "text", "actor"}, {"17", "text", "reason"},
	{"19", "bigint", "result_ttl_us"}, {"20", "int", "max_rescues"}, {"21", "text", "merge_policy"},
	{"23", "text", "fairness_key"}, {"24", "text", "on_parent_failure"}, {"25", "text", "workflow_id"},
	{"26", "text", "workflow_step"},
}

// insertStatement builds insertSQL (batch: the fields as arrays, unnested), insertOneSQL or,
// with steps, insertStepsSQL.
func insertStatement(batch, steps bool) string {
	params, names := make([]string, len(insertColumns)), make([]string, len(insertColumns))
	for i, c := range insertColumns {
		params[i], names[i] = "$"+c.param+"::"+c.typ, c.name
		if batch {
			params[i] += "[]"
		}
	}
	rows := `unnest(` + strings.Join(params, ", ") + `)`
	stepRows := ""
	if steps {
		stepRows = `
named AS (INSERT INTO {schema}.workflow_steps (workflow_id, job_id, step)
	SELECT workflow_id, id, workflow_step FROM ins WHERE workflow_id IS NOT NULL),`
	}
	existing := `
UNION ALL
SELECT ` + cols + ` FROM {schema}.jobs WHERE id = ANY($18::text[])`
	if !batch {
		// No existing jobs: a plan that may have to look some up costs more than one that
		// knows there are none, and PostgreSQL would plan every call again to know it.
		rows, existing = `(VALUES (`+strings.Join(params, ", ")+`))`, ` WHERE coalesce(cardinality($18::text[]), 0) = 0`
	}
	return `WITH held AS (SELECT set_config('hopper.held_wakes', $22::text[]::text, true)),
clk AS (SELECT coalesce($1::timestamptz, now()) AS now FROM held),
ins AS (
	INSERT INTO {schema}.jobs (id, kind, queue, priority, args, headers, state, max_attempts, run_at,
		timeout_us, retry_policy, idempotency_key, group_key, merge_key, schedule_id, last_actor,
		last_reason, created_actor, created_reason, created_at, updated_at, result_ttl_us, max_rescues,
		merge_policy, fairness_key, on_parent_failure, workflow_id, workflow_step)
	SELECT t.id, t.kind, t.queue, t.priority, t.args, t.headers::json,
		CASE WHEN t.on_parent_failure IS NOT NULL THEN 'waiting' WHEN t.run_at > clk.now THEN 'scheduled'
			ELSE 'queued' END, t.max_attempts,
		CASE WHEN t.run_at > clk.now THEN t.run_at ELSE clk.now END, t.timeout_us,
		t.retry_policy::jsonb, t.key, t.group_key, t.merge_key, t.schedule_id, t.actor, t.reason,
		t.actor, t.reason, clk.now, clk.now, t.result_ttl_us, t.max_rescues, t.merge_policy,
		t.fairness_key, t.on_parent_failure, t.workflow_id, t.workflow_step
	FROM ` + rows + ` AS t(` + strings.Join(names, ", ") + `), clk
	RETURNING ` + cols + `),` + stepRows + `
agg AS (` + statsEnqueuedSQL + `)
SELECT ` + cols + ` FROM ins` + existing
}

// claimKeysSQL takes each idempotency key for its job unless a live key holds it. The update
// is unconditional (it rewrites a live key unchanged) so that RETURNING always yields the key's
// current holder, even one committed by a concurrent transaction this statement waited for.
const claimKeysSQL = `INSERT INTO {schema}.idempotency_keys AS k (key, job_id, payload_hash, expires_at)
SELECT t.key, t.job_id, t.hash, coalesce($1::timestamptz, now()) + t.ttl_us * interval '1 microsecond'
FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS t(key, job_id, hash, ttl_us)
ON CONFLICT (key) DO UPDATE SET
	job_id = CASE WHEN k.expires_at <= coalesce($1::timestamptz, now()) THEN excluded.job_id ELSE k.job_id END,
	payload_hash = CASE WHEN k.expires_at <= coalesce($1::timestamptz, now()) THEN excluded.payload_hash ELSE k.payload_hash END,
	expires_at = CASE WHEN k.expires_at <= coalesce($1::timestamptz, now()) THEN excluded.expires_at ELSE k.expires_at END
RETURNING key, job_id, payload_hash`

// JobInsertMany inserts every job in one statement, all or none. A batch with idempotency
// keys takes a transaction of two statements: claim the keys, then insert. A batch with merge
// keys takes a transaction too, in which its merge items go one by one (merge.go).
//
// Its wake-ups to other processes are spaced by Config.WakeInterval (wakes.go).
func (s *Store) JobInsertMany(ctx context.Context, params []*store.InsertParams) ([]*store.InsertResult, error) {
	return s.insertMany(ctx, pgxDB{s.pool}, params, s.wakes)
}

// insertMany inserts through d. With wakes (only when d is the pool: the batch commits before
// insertMany returns) the insert leaves out the wake-ups the limiter holds, which it sends later.
func (s *Store) insertMany(ctx context.Context, d db, params []*store.InsertParams, wakes *wakeLimiter) (_ []*store.InsertResult, err error) {
	if len(params) == 0 {
		return nil, nil
	}
	plan, perr := planInsert(params)
	if perr != nil {
		return nil, fmt.Errorf("insert jobs: %w", perr)
	}
	if wakes != nil {
		now := s.Now()
		turn := wakes.reserve(wakeKeys(params, now))
		plan.held = turn.held
		defer func() {
			if err != nil { // it may have committed all the same (a connection lost at commit)
				plan.inserted = mayHaveInserted(params, now)
			}
			wakes.release(turn, plan.inserted)
		}()
	}
	if len(plan.firstOfKey) == 0 && !plan.merging && !plan.linking {
		err = s.insertPlanned(ctx, d, plan)
	} else {
		err = s.insertKeyed(ctx, d, plan)
	}
	if err != nil {
		return nil, s.wrap(err, "insert jobs")
	}
	return plan.results, nil
}

// mayHaveInserted is the rows of a batch whose insert failed, as wakeKeys guessed them, for the
// wake-ups it held.
func mayHaveInserted(params []*store.InsertParams, now time.Time) []*hoppertype.JobRow {
	rows := make([]*hoppertype.JobRow, len(params))
	for i, p := range params {
		rows[i] = &hoppertype.JobRow{ID: p.ID, Queue: p.Queue, State: guessedState(p, now), RunAt: p.RunAt}
	}
	return rows
}

// guessedState is the state an insert at now gives the job, by the local clock.
func guessedState(p *store.InsertParams, now time.Time) hoppertype.JobState {
	if len(p.After) > 0 {
		return hoppertype.StateWaiting // no wake-up: its parents' endings release it
	}
	if p.RunAt.After(now) {
		return hoppertype.StateScheduled
	}
	return hoppertype.StateQueued
}

// wakeKeys names the wake-ups a batch's insert would send: its queues' for jobs due by now, and
// the scheduled jobs' one. A guess that proves wrong (the database's clock is the judge) only
// leaves that wake-up unheld.
func wakeKeys(params []*store.InsertParams, now time.Time) []string {
	seen := map[string]bool{}
	var keys []string
	for _, p := range params {
		k, ok := wakeKeyOf(p.Queue, guessedState(p, now))
		if ok && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// insertPlan is a batch on its way in. Items sharing an idempotency key resolve to the first
// of them: keyed[i] is the index of the item whose key decides item i's job.
type insertPlan struct {
	params     []*store.InsertParams
	hashes     []string
	keyed      []int                       // -1 when item i has no key
	firstOfKey map[string]int              // key → first item with it
	existing   map[int]string              // first-of-key item → the live job its key names
	merging    bool                        // some item has a merge key
	linking    bool                        // some item has parents (deps.go)
	merged     map[int]*store.InsertResult // merge item → its job, merged into or new
	results    []*store.InsertResult
	held       []string             // wake-ups the insert statement leaves out (wakes.go)
	inserted   []*hoppertype.JobRow // the rows its statements inserted (merges' too)
}

// planInsert groups items by idempotency key. A batch store.CheckBatch refuses (two items
// with one key and different payloads…) fails before anything is written.
func planInsert(params []*store.InsertParams) (*insertPlan, error) {
	if err := store.CheckBatch(params); err != nil {
		return nil, err
	}
	p := &insertPlan{
		params: params, hashes: make([]string, len(params)), keyed: make([]int, len(params)),
		firstOfKey: map[string]int{}, existing: map[int]string{}, merged: map[int]*store.InsertResult{},
		results: make([]*store.InsertResult, len(params)),
	}
	if err := store.CheckParentOrder(params); err != nil {
		return nil, err
	}
	for i, ip := range params {
		p.keyed[i] = -1
		p.merging = p.merging || ip.MergeKey != ""
		p.linking = p.linking || len(ip.After) > 0
		if ip.IdempotencyKey == "" {
			continue
		}
		p.hashes[i] = store.PayloadHash(ip.Kind, ip.Args)
		first, seen := p.firstOfKey[ip.IdempotencyKey]
		if !seen {
			p.firstOfKey[ip.IdempotencyKey] = i
			first = i
		}
		p.keyed[i] = first
	}
	return p, nil
}

// insertKeyed locks the batch's merge keys, claims its idempotency keys, merges and inserts in
// one atomic unit. Locks are taken in one order (merge keys, then idempotency keys, each
// sorted), so batches do not deadlock on them.
func (s *Store) insertKeyed(ctx context.Context, d db, plan *insertPlan) error {
	tx, err := d.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	if plan.merging {
		if err := s.lockMergeKeys(ctx, tx, plan.params); err != nil {
			return err
		}
	}
	if len(plan.firstOfKey) > 0 {
		if err := s.claimKeys(ctx, tx, plan); err != nil {
			return err
		}
	}
	if plan.merging {
		if err := s.mergeItems(ctx, tx, plan); err != nil {
			return err
		}
	}
	if err := s.insertPlanned(ctx, tx, plan); err != nil {
		return err
	}
	if plan.linking {
		if err := s.linkChildren(ctx, tx, plan); err != nil {
			return err
		}
	}
	return tx.commit(ctx)
}

// claimKeys records, for each key, whether this batch took it or a live job holds it.
func (s *Store) claimKeys(ctx context.Context, d db, plan *insertPlan) error {
	keys := make([]string, 0, len(plan.firstOfKey))
	for k := range plan.firstOfKey {
		keys = append(keys, k)
	}
	sort.Strings(keys) // one lock order for every batch: no deadlocks between them
	jobIDs, hashes, ttls := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for n, k := range keys {
		i := plan.firstOfKey[k]
		jobIDs[n], hashes[n], ttls[n] = plan.params[i].ID, plan.hashes[i], micros(plan.params[i].IdempotencyTTL)
	}
	rs, err := d.query(ctx, s.sql(claimKeysSQL), s.nowArg(), keys, jobIDs, hashes, ttls)
	if err != nil {
		return fmt.Errorf("claim idempotency keys: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var key, jobID, hash string
		if err := rs.Scan(&key, &jobID, &hash); err != nil {
			return fmt.Errorf("claim idempotency keys: %w", err)
		}
		i := plan.firstOfKey[key]
		switch {
		case jobID == plan.params[i].ID:
		case hash != plan.hashes[i]:
			return fmt.Errorf("idempotency key %q names job %s: %w", key, jobID, store.ErrDuplicate)
		default:
			plan.existing[i] = jobID
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("claim idempotency keys: %w", err)
	}
	return nil
}

// insertPlanned inserts the items that make new jobs and reads the jobs live keys named. Merge
// items are in already (mergeItems).
func (s *Store) insertPlanned(ctx context.Context, d db, plan *insertPlan) error {
	a := &insertArrays{}
	var existingIDs []string
	for i, p := range plan.params {
		switch first := plan.keyed[i]; {
		case first >= 0 && first != i:
			continue // resolved with its key's first item
		case first >= 0 && plan.existing[i] != "":
			existingIDs = append(existingIDs, plan.existing[i])
		case plan.merged[i] != nil:
			continue
		default:
			a.add(p)
		}
	}
	if len(a.ids) == 0 && len(existingIDs) == 0 {
		return plan.resolve(nil) // every item merged
	}
	jobs, err := s.insertRows(ctx, d, a, existingIDs, plan.held)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if !slices.Contains(existingIDs, j.ID) {
			plan.inserted = append(plan.inserted, j)
		}
	}
	return plan.resolve(jobs)
}

// insertRows runs insertSQL: the new jobs of a, then the jobs existingIDs names. The trigger
// leaves out the wake-ups held names (migration 0019).
func (s *Store) insertRows(ctx context.Context, d db, a *insertArrays, existingIDs, held []string) ([]*hoppertype.JobRow, error) {
	if held == nil {
		held = []string{}
	}
	query, fields := insertSQL, append(a.args(), a.resultTTLs, a.maxRescues, a.mergePolicies, a.fairness, a.parentPolicies,
		a.workflows, a.steps)
	switch {
	case slices.ContainsFunc(a.workflows, func(w *string) bool { return w != nil }):
		query = insertStepsSQL
	case len(a.ids) == 1 && len(existingIDs) == 0:
		query = insertOneSQL
		for i, f := range fields {
			fields[i] = reflect.ValueOf(f).Index(0).Interface() // the one job's field
		}
	}
	const beforeExisting, beforeHeld = 16, 19 // the fields $2–$17; $18 is existingIDs, then $19–$21, $22 held, $23–$26
	args := append(append([]any{s.nowArg()}, fields[:beforeExisting]...), existingIDs)
	args = append(append(append(args, fields[beforeExisting:beforeHeld]...), held), fields[beforeHeld:]...)
	rs, err := d.query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, err
	}
	return scanJobs(rs)
}

// resolve fills in the results from the rows the insert returned.
func (plan *insertPlan) resolve(jobs []*hoppertype.JobRow) error {
	byID := make(map[string]*hoppertype.JobRow, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for i, p := range plan.params {
		first := plan.keyed[i]
		switch {
		case first < 0 && plan.merged[i] != nil:
			plan.results[i] = plan.merged[i]
		case first < 0:
			plan.results[i] = &store.InsertResult{Job: byID[p.ID]}
		case plan.existing[first] != "":
			plan.results[i] = &store.InsertResult{Job: byID[plan.existing[first]], Existing: true}
		case plan.merged[first] != nil && first == i:
			plan.results[i] = plan.merged[i]
		case plan.merged[first] != nil:
			plan.results[i] = &store.InsertResult{Job: plan.merged[first].Job, Existing: true}
		default:
			plan.results[i] = &store.InsertResult{Job: byID[plan.params[first].ID], Existing: first != i}
		}
		if plan.results[i].Job == nil {
			return fmt.Errorf("job %s (item %d) missing after insert", p.ID, i)
		}
	}
	return nil
}

// insertArrays holds a batch column by column, for unnest.
type insertArrays struct {
	ids, kinds, queues, actors                                  []string
	priorities, maxAttempts, maxRescues                         []int32
	payloads                                                    [][]byte
	headers, policies, keys, groups, merges, schedules, reasons []*string
	mergePolicies, fairness, parentPolicies                     []*string
	workflows, steps                                            []*string
	runAt                                                       []*time.Time
	timeouts, resultTTLs                                        []int64
}

func (a *insertArrays) add(p *store.InsertParams) {
	a.ids, a.kinds, a.queues = append(a.ids, p.ID), append(a.kinds, p.Kind), append(a.queues, p.Queue)
	a.priorities, a.maxAttempts = append(a.priorities, int32(p.Priority)), append(a.maxAttempts, int32(p.MaxAttempts))
	a.payloads = append(a.payloads, []byte(p.Args))
	a.headers, a.policies = append(a.headers, encodeHeaders(p.Headers)), append(a.policies, encodePolicy(p.RetryPolicy))
	a.runAt, a.timeouts = append(a.runAt, nullTime(p.RunAt)), append(a.timeouts, micros(p.Timeout))
	a.resultTTLs = append(a.resultTTLs, micros(p.ResultTTL))
	a.maxRescues = append(a.maxRescues, int32(store.RescueBound(p.MaxRescues)))
	a.keys, a.groups = append(a.keys, nullStr(p.IdempotencyKey)), append(a.groups, nullStr(p.GroupKey))
	a.merges, a.schedules = append(a.merges, nullStr(p.MergeKey)), append(a.schedules, nullStr(p.ScheduleID))
	a.actors, a.reasons = append(a.actors, string(p.Actor)), append(a.reasons, nullStr(p.Reason))
	a.fairness = append(a.fairness, nullStr(p.FairnessKey))
	a.workflows, a.steps = append(a.workflows, nullStr(p.WorkflowID)), append(a.steps, nullStr(p.Step))
	var parents *string
	if len(p.After) > 0 {
		parents = nullStr(string(p.OnParentFailure.OrDefault()))
	}
	a.parentPolicies = append(a.parentPolicies, parents)
	var policy *string
	if p.MergeKey != "" {
		policy = nullStr(string(p.Merge))
	}
	a.mergePolicies = append(a.mergePolicies, policy)
}

// args returns the arrays in insertSQL's parameter order ($2–$17).
func (a *insertArrays) args() []any {
	return []any{a.ids, a.kinds, a.queues, a.priorities, a.payloads, a.headers, a.runAt, a.maxAttempts,
		a.timeouts, a.policies, a.keys, a.groups, a.merges, a.schedules, a.actors, a.reasons}
}

func encodeHeaders(h map[string]string) *string {
	if len(h) == 0 {
		return nil
	}
	b, _ := json.Marshal(h) // a map of strings always marshals
	s := string(b)
	return &s
}

func encodePolicy(p *hoppertype.RetryPolicy) *string {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p) // plain numbers always marshal
	s := string(b)
	return &s
}
