package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// HistoryRows counts job id's rows in job_events and job_attempts.
func HistoryRows(s *Store, id string) (events, attempts int, err error) {
	err = s.reader.QueryRowContext(context.Background(), `SELECT
		(SELECT count(*) FROM job_events WHERE job_id = ?1),
		(SELECT count(*) FROM job_attempts WHERE job_id = ?1)`, id).Scan(&events, &attempts)
	return events, attempts, err
}

// FairKeys lists the fairness keys queue holds in fair_keys, but the unkeyed jobs' "".
func FairKeys(s *Store, queue string) ([]string, error) {
	rows, err := s.reader.QueryContext(context.Background(),
		`SELECT fairness_key FROM fair_keys WHERE queue = ? AND fairness_key <> '' ORDER BY fairness_key`, queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// BatchPlans is SQLite's query plan of each of a batch claim's reads, one line per step.
func BatchPlans(s *Store) (map[string]string, error) {
	out := map[string]string{}
	// The plain claim's candidates, whose group probe is the same: ?1–?3 unused, ?4 the queue.
	claim := "SELECT ?1, ?2, ?3, * FROM (" + fmt.Sprintf(candidateSQL, "", "?5") + ")"
	for name, q := range map[string]string{"heads": batchHeadsSQL, "run": batchRunSQL, "ungrouped": batchUngroupedSQL, "claim": claim} {
		args := []any{"default", "k", 10}
		if name == "claim" {
			args = []any{nil, nil, nil, "default", 10}
		}
		plan, err := queryPlan(s, q, args...)
		if err != nil {
			return nil, err
		}
		out[name] = plan
	}
	return out, nil
}

// ParentsPlan is SQLite's query plans of the read of a job's parents, with their results and
// without.
func ParentsPlan(s *Store) (string, error) {
	with, err := queryPlan(s, parentResultsSQL, "child", 0, 0, -1)
	if err != nil {
		return "", err
	}
	without, err := queryPlan(s, parentsNoResultsSQL, "child", 0, 0, 20)
	return with + without, err
}

// ChildrenPlans are SQLite's query plans of the read of a page of a job's children and of
// their count.
func ChildrenPlans(s *Store) (string, error) {
	page, err := queryPlan(s, childrenSQL, "parent", 0, "", 10)
	if err != nil {
		return "", err
	}
	count, err := queryPlan(s, childrenCountSQL, "parent", 0)
	return page + count, err
}

// WorkflowStepsPlans are SQLite's query plans of the read of a page of a workflow's steps,
// every filter set, and of the names its steps run after.
func WorkflowStepsPlans(s *Store) (string, error) {
	q, args, err := stepsQuery(&store.WorkflowStepsParams{ID: "w", States: []hoppertype.JobState{hoppertype.StateFailed},
		StepContains: "x", Cursor: store.EncodeCursor("c")}, time.Now(), 10)
	if err != nil {
		return "", err
	}
	steps, err := queryPlan(s, q, args...)
	if err != nil {
		return "", err
	}
	deps, err := queryPlan(s, pageParentsSQL, "w", `["a"]`)
	return steps + deps, err
}

// WorkflowMarkPlans are SQLite's query plans of a pass of WorkflowMarkEnded: the read of its
// batch of open workflows, the marking and the deletion of those without steps.
func WorkflowMarkPlans(s *Store) (string, error) {
	var out string
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{markOpenSQL, []any{"", 500}},
		{markEndedSQL, []any{`["a","b"]`, 0}},
		{deleteSteplessSQL, []any{`["a","b"]`}},
	} {
		plan, err := queryPlan(s, q.sql, q.args...)
		if err != nil {
			return "", err
		}
		out += plan
	}
	return out, nil
}

// WorkflowEndedListPlan is SQLite's query plan of the candidates of a list of workflows
// filtered by the ended states alone.
func WorkflowEndedListPlan(s *Store) (string, error) {
	f := &workflowFilter{order: "ASC", cmp: ">"}
	cands, args := workflowCandidates(f, []hoppertype.WorkflowState{hoppertype.WorkflowCompleted}, 0, 10)
	return queryPlan(s, cands, args...)
}

// queryPlan is SQLite's plan of query with args, one line per step.
func queryPlan(s *Store, query string, args ...any) (string, error) {
	rows, err := s.reader.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		plan += detail + "\n"
	}
	return plan, rows.Err()
}

// KeyBucketRows counts the stored buckets of the rate limits per key.
func KeyBucketRows(s *Store) (n int, err error) {
	err = s.reader.QueryRowContext(context.Background(), `SELECT count(*) FROM key_buckets`).Scan(&n)
	return n, err
}

// FlagParentsPlan is SQLite's query plan of a child's insert flagging its parents.
func FlagParentsPlan(s *Store) (string, error) { return queryPlan(s, flagManySQL, `["a","b"]`) }

// ReleasePlan is SQLite's query plan of a round of endings settling their children.
func ReleasePlan(s *Store) (string, error) {
	return queryPlan(s, releaseSQL, `[["c",1,0,null,null,null,null,"a","completed","worker"]]`, 0)
}

// CountPlan is SQLite's query plan of a round of endings counting their dependencies down.
func CountPlan(s *Store) (string, error) { return queryPlan(s, countSQL, `["a"]`, "completed") }

// StepParentsPlan is SQLite's query plan of the names each step of a workflow runs after.
func StepParentsPlan(s *Store) (string, error) { return queryPlan(s, stepParentsSQL, "w") }

// LimitPages caps the writer's database file at its current size plus extra pages
// (max_page_count), so that a write needing more fails as on a full disk; extra < 0 lifts
// the cap.
func LimitPages(s *Store, extra int) error {
	ctx := context.Background()
	if extra < 0 {
		_, err := s.writer.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`)
		return err
	}
	var pages int
	if err := s.writer.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return err
	}
	_, err := s.writer.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+extra))
	return err
}

// JobsInStorageOrder lists the ids of the jobs in the order of their rows in the table.
func JobsInStorageOrder(s *Store) ([]string, error) {
	return queryStrings(context.Background(), s.reader, `SELECT id FROM jobs ORDER BY rowid`)
}
