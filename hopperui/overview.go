package hopperui

import (
	"context"
	"net/http"
	"time"

	"github.com/hopperjobs/hopper"
)

type overviewData struct {
	Leader      string
	Self        string
	Queues      []*queueRow
	DeadLetters *hopper.DeadLetterStats
	Hour, Day   *chart
	Totals      map[hopper.JobState]int64
	States      []hopper.JobState
}

// queueRow is a queue with what the overview and the queues page show about it.
type queueRow struct {
	*hopper.QueueInfo
	OldestQueued time.Time // run_at of the longest-waiting queued job; zero when none
	HourDone     int64
	HourFailed   int64
	HourRetried  int64
	WaitP50      time.Duration
	WaitP95      time.Duration
	Waits        int64
}

// states in the order pages show them.
var states = []hopper.JobState{hopper.StateWaiting, hopper.StateQueued, hopper.StateScheduled, hopper.StateRunning,
	hopper.StateSuspended, hopper.StateCompleted, hopper.StateFailed, hopper.StateCanceled}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	now := v.Now
	h.refreshing(v, "/")
	rows, err := h.queueRows(ctx, now)
	if err != nil {
		return err
	}
	dl, err := h.client.DeadLetterStats(ctx)
	if err != nil {
		return err
	}
	dayFrom := now.Truncate(time.Minute).Add(-24*time.Hour + time.Minute)
	stats, err := h.client.Stats(ctx, &hopper.StatsParams{Since: dayFrom})
	if err != nil {
		return err
	}
	hourFrom := now.Truncate(time.Minute).Add(-59 * time.Minute)
	to := now.Truncate(time.Minute).Add(time.Minute)
	d := &overviewData{Leader: h.client.LeaderID(), Self: h.client.NodeID(), Queues: rows, DeadLetters: dl,
		Hour:   throughput("Last hour, per minute", stats, hourFrom, to, time.Minute),
		Day:    throughput("Last 24 hours, per 10 minutes", stats, to.Add(-24*time.Hour), to, 10*time.Minute),
		Totals: map[hopper.JobState]int64{}, States: states}
	for _, q := range rows {
		for s, n := range q.Counts {
			d.Totals[s] += n
		}
	}
	v.Title, v.Data = "Overview", d
	h.render(w, r, http.StatusOK, "overview", v)
	return nil
}

// queueRows lists the queues with their oldest queued job and the last hour's stats.
func (h *Handler) queueRows(ctx context.Context, now time.Time) ([]*queueRow, error) {
	qs, err := h.client.Queues(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := h.client.Stats(ctx, &hopper.StatsParams{Since: now.Add(-time.Hour)})
	if err != nil {
		return nil, err
	}
	byQueue := map[string]*queueRow{}
	rows := make([]*queueRow, len(qs))
	for i, q := range qs {
		rows[i] = &queueRow{QueueInfo: q}
		byQueue[q.Name] = rows[i]
		if q.Counts[hopper.StateQueued] == 0 {
			continue
		}
		if rows[i].OldestQueued, err = h.client.OldestQueuedAt(ctx, q.Name); err != nil {
			return nil, err
		}
	}
	waits := map[string]*hopper.WaitHistogram{}
	for _, s := range stats {
		q := byQueue[s.Queue]
		if q == nil {
			continue
		}
		q.HourDone += s.Completed
		q.HourFailed += s.Failed
		q.HourRetried += s.Retried
		if waits[s.Queue] == nil {
			waits[s.Queue] = &hopper.WaitHistogram{}
		}
		waits[s.Queue].Merge(&s.Wait)
	}
	for name, w := range waits {
		q := byQueue[name]
		q.WaitP50, q.WaitP95, q.Waits = w.Percentile(50), w.Percentile(95), w.Count()
	}
	return rows, nil
}
