package hopperui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hopperjobs/hopper"
)

// Bulk actions change the jobs ticked in the list, or those matching the search, at most
// BulkLimit at once. Each change goes through the Client's own call for one job, so each is
// audited as that call is: a cancel in the job's history (actor operator, the user named in
// the reason), a replay in the replay audit log (replayed by the user).

type bulkResult struct {
	done, skipped int
	firstSkip     error
}

func (b *bulkResult) String(verb string) string {
	s := fmt.Sprintf("%s %d job(s).", verb, b.done)
	if b.skipped > 0 {
		s += fmt.Sprintf(" %d skipped (first: %v).", b.skipped, b.firstSkip)
	}
	return s
}

func (h *Handler) jobsBulk(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := r.ParseForm(); err != nil {
		return invalid("form", "%v", err)
	}
	action := r.PostForm.Get("action")
	ids, err := h.bulkTargets(r, action)
	if err == nil {
		var res *bulkResult
		switch action {
		case "cancel", "cancel-filter":
			res = h.bulk(r.Context(), ids, func(ctx context.Context, id string) error {
				_, err := h.client.CancelBy(ctx, id, hopper.ActorOperator, "dashboard bulk cancel by "+v.User.Name)
				return err
			})
			v.Notice = res.String("Canceled")
		case "retry", "retry-filter":
			res = h.bulk(r.Context(), ids, func(ctx context.Context, id string) error {
				_, err := h.client.RetryJob(ctx, id, hopper.RetryOpts{By: v.User.Name, Actor: hopper.ActorOperator,
					Reason: "dashboard bulk retry"})
				return err
			})
			v.Notice = res.String("Retried in place")
		case "replay", "replay-filter":
			res = h.bulk(r.Context(), ids, func(ctx context.Context, id string) error {
				_, err := h.client.Replay(ctx, id, v.User.Name)
				return err
			})
			v.Notice = res.String("Replayed")
		}
	}
	if err != nil {
		var verr *hopper.ValidationError
		if !errors.As(err, &verr) {
			return err
		}
		_, v.Error = explain(err)
	}
	// The list as it is now, with the same search.
	r.Form.Del("cursor")
	d := &jobsData{States: states, BulkLimit: BulkLimit}
	v.Title, v.Data = "Jobs", d
	if err := h.search(r, d); err != nil && v.Error == "" {
		_, v.Error = explain(err)
	}
	h.render(w, r, http.StatusOK, "jobs", v)
	return nil
}

// bulkTargets are the ids an action applies to: the ticked ones, or the search's first
// matches (for retry and replay, its failed ones), at most BulkLimit or the form's limit.
func (h *Handler) bulkTargets(r *http.Request, action string) ([]string, error) {
	limit := 100
	if s := r.PostForm.Get("bulk_limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > BulkLimit {
			return nil, invalid("bulk_limit", "%q is not a number from 1 to %d", s, BulkLimit)
		}
		limit = n
	}
	switch action {
	case "cancel", "retry", "replay":
		ids := r.PostForm["select"]
		if len(ids) == 0 {
			return nil, invalid("select", "tick at least one job")
		}
		if len(ids) > limit {
			return nil, invalid("select", "%d jobs ticked, more than the limit of %d", len(ids), limit)
		}
		return ids, nil
	case "cancel-filter", "retry-filter", "replay-filter":
	default:
		return nil, invalid("action", "%q is not cancel, retry, replay, cancel-filter, retry-filter or replay-filter", action)
	}
	f, err := readFilter(r.PostForm)
	if err != nil {
		return nil, err
	}
	f.Cursor, f.Limit = "", limit
	p, err := f.params()
	if err != nil {
		return nil, err
	}
	if action == "retry-filter" || action == "replay-filter" {
		if len(p.States) > 0 && p.States[0] != hopper.StateFailed {
			return nil, invalid("state", "only failed jobs can be retried or replayed; search for state failed")
		}
		p.States = []hopper.JobState{hopper.StateFailed}
	}
	res, err := h.client.List(r.Context(), p)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID
	}
	return ids, nil
}

// bulk applies fn to each id; a job fn refuses (ended already, not failed, gone) is skipped.
// A database failure stops the action: what was done stays done.
func (h *Handler) bulk(ctx context.Context, ids []string, fn func(context.Context, string) error) *bulkResult {
	res := &bulkResult{}
	for _, id := range ids {
		err := fn(ctx, id)
		switch {
		case err == nil:
			res.done++
		case errors.Is(err, hopper.ErrUnavailable) || ctx.Err() != nil:
			res.skipped += 1
			if res.firstSkip == nil {
				res.firstSkip = err
			}
			return res
		default:
			res.skipped++
			if res.firstSkip == nil {
				res.firstSkip = err
			}
		}
	}
	return res
}
