package store

import (
	"context"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// StatsStore keeps per-minute aggregates of what happened to jobs (hoppertype.MinuteStats).
// Stores write them in the transactions that insert jobs (JobInsertMany: Enqueued) and finish
// attempts (JobFinishMany: Completed, Failed, Retried and the wait histogram), one row per
// minute, queue and kind per transaction however many jobs it holds, so the hot path pays one
// upsert per batch, not one per job. The leader's transactions that fail jobs count them as
// Failed too: a rescue's jobs out of rescues (worker_lost) and suspended jobs at their
// deadline (JobFailOverdue), so Failed counts every new dead letter.
type StatsStore interface {
	// StatsList returns the aggregates of the minutes from p.Since on (whole minutes), by
	// minute, queue, then kind, optionally for one queue or one kind.
	StatsList(ctx context.Context, p *StatsParams) ([]*hoppertype.MinuteStats, error)
	// StatsPrune deletes the aggregates of the minutes before before and returns how many rows
	// it removed.
	StatsPrune(ctx context.Context, before time.Time) (int64, error)
}

// StatsParams filters StatsList.
type StatsParams struct {
	Since time.Time
	Queue string // "" for every queue
	Kind  string // "" for every kind
}

// StatsCounter is the counter of MinuteStats an attempt's end adds to.
type StatsCounter string

// The counters an attempt's end adds to; StatsNone for an end that counts in none (a snooze,
// a suspension, a cancel).
const (
	StatsNone      StatsCounter = ""
	StatsCompleted StatsCounter = "completed"
	StatsFailed    StatsCounter = "failed"
	StatsRetried   StatsCounter = "retried"
)

// Counter is the counter p's outcome adds to. SQLite counts with it; PostgreSQL's finish
// statement computes the same in SQL (counterSQL, from RetriedOutcomes), and the conformance
// suite holds both to it.
func (p *FinishParams) Counter() StatsCounter {
	switch p.State {
	case hoppertype.StateCompleted:
		return StatsCompleted
	case hoppertype.StateFailed:
		return StatsFailed
	case hoppertype.StateScheduled, hoppertype.StateQueued:
		if slices.Contains(RetriedOutcomes, p.Outcome) {
			return StatsRetried
		}
	}
	return StatsNone
}

// RetriedOutcomes are the outcomes of a failed attempt: one that ends in state scheduled or
// queued with one of them is a retry (StatsRetried). PostgreSQL's finish statement builds its
// test from this list.
var RetriedOutcomes = []hoppertype.Outcome{hoppertype.OutcomeError, hoppertype.OutcomeTimeout, hoppertype.OutcomePanic}

// StatsBatch gathers one transaction's counts in memory, one entry per queue and kind, so the
// store writes one row each at the end of the transaction. The zero value is not usable:
// make one with NewStatsBatch.
type StatsBatch struct {
	minute time.Time
	rows   map[[2]string]*hoppertype.MinuteStats
	order  [][2]string
}

// NewStatsBatch starts a batch for the minute that holds now.
func NewStatsBatch(now time.Time) *StatsBatch {
	return &StatsBatch{minute: now.UTC().Truncate(time.Minute), rows: map[[2]string]*hoppertype.MinuteStats{}}
}

func (b *StatsBatch) row(queue, kind string) *hoppertype.MinuteStats {
	k := [2]string{queue, kind}
	r, ok := b.rows[k]
	if !ok {
		r = &hoppertype.MinuteStats{Minute: b.minute, Queue: queue, Kind: kind}
		b.rows[k] = r
		b.order = append(b.order, k)
	}
	return r
}

// Enqueued counts an inserted job.
func (b *StatsBatch) Enqueued(queue, kind string) { b.row(queue, kind).Enqueued++ }

// Finished counts an attempt's end under c, and its wait unless wait is nil (its run_at
// changed).
func (b *StatsBatch) Finished(queue, kind string, c StatsCounter, wait *time.Duration) {
	if c == StatsNone && wait == nil {
		return
	}
	r := b.row(queue, kind)
	switch c {
	case StatsCompleted:
		r.Completed++
	case StatsFailed:
		r.Failed++
	case StatsRetried:
		r.Retried++
	}
	if wait != nil {
		r.Wait.Add(*wait)
	}
}

// Failed counts a job that failed without an attempt's end (JobFinishMany) failing it: a
// rescue's job out of rescues, a suspended job at its deadline.
func (b *StatsBatch) Failed(queue, kind string) { b.row(queue, kind).Failed++ }

// Rescued counts the jobs a rescue failed (out of rescues: outcome worker_lost) as failed;
// those it gave back to their queue count in no counter.
func (b *StatsBatch) Rescued(jobs []RescuedJob) {
	for _, j := range jobs {
		if j.State == hoppertype.StateFailed {
			b.Failed(j.Queue, j.Kind)
		}
	}
}

// FinishedJob counts the end p of an attempt of job (the row as it was claimed): under p's
// counter, and with the attempt's wait (run_at to its start) unless p gives the job a new
// run_at.
func (b *StatsBatch) FinishedJob(job *hoppertype.JobRow, p *FinishParams) {
	var wait *time.Duration
	if p.RunAt.IsZero() && !job.StartedAt.IsZero() {
		w := job.StartedAt.Sub(job.RunAt)
		wait = &w
	}
	b.Finished(job.Queue, job.Kind, p.Counter(), wait)
}

// Rows returns the batch's aggregates in the order they were first counted.
func (b *StatsBatch) Rows() []*hoppertype.MinuteStats {
	out := make([]*hoppertype.MinuteStats, len(b.order))
	for i, k := range b.order {
		out[i] = b.rows[k]
	}
	return out
}
