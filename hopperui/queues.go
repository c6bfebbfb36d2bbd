package hopperui

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hopperjobs/hopper"
)

type queuesData struct {
	Queues []*queueRow
	States []hopper.JobState
	Kinds  []*hopper.KindInfo
}

func (h *Handler) queues(w http.ResponseWriter, r *http.Request, v *view) error {
	h.refreshing(v, "/queues")
	rows, err := h.queueRows(r.Context(), v.Now)
	if err != nil {
		return err
	}
	kinds, err := h.client.Kinds(r.Context())
	if err != nil {
		return err
	}
	v.Title, v.Data = "Queues", &queuesData{Queues: rows, States: states, Kinds: kinds}
	h.render(w, r, http.StatusOK, "queues", v)
	return nil
}

func (h *Handler) queuePause(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := h.client.PauseQueue(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	return h.afterQueueChange(w, r, v, "Paused queue "+r.PathValue("name")+".")
}

func (h *Handler) queueResume(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := h.client.ResumeQueue(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	return h.afterQueueChange(w, r, v, "Resumed queue "+r.PathValue("name")+".")
}

// queueSettings sets a queue's weight, cap and rate limit, and its limits per fairness key,
// from the queue page's form; an empty field leaves its setting alone, 0 removes it.
func (h *Handler) queueSettings(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, name := r.Context(), r.PathValue("name")
	if s := strings.TrimSpace(r.PostFormValue("weight")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return invalid("weight", "%q is not a whole number", s)
		}
		if err := h.client.SetQueueWeight(ctx, name, n); err != nil {
			return err
		}
	}
	if s := strings.TrimSpace(r.PostFormValue("max_running")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return invalid("max_running", "%q is not a whole number", s)
		}
		if err := h.client.SetLimit(ctx, hopper.Limit{Queue: name, MaxRunning: n}); err != nil {
			return err
		}
	}
	if s := strings.TrimSpace(r.PostFormValue("rate")); s != "" {
		rate, err := hopper.ParseRate("rate", s)
		if err != nil {
			return err
		}
		if err := h.client.SetRateLimit(ctx, hopper.RateLimit{Queue: name, Rate: rate}); err != nil {
			return err
		}
	}
	if s := strings.TrimSpace(r.PostFormValue("cap_per_key")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return invalid("cap_per_key", "%q is not a whole number", s)
		}
		if err := h.client.SetLimit(ctx, hopper.Limit{Queue: name, MaxRunning: n, PerKey: true}); err != nil {
			return err
		}
	}
	if s := strings.TrimSpace(r.PostFormValue("rate_per_key")); s != "" {
		rate, err := hopper.ParseRate("rate_per_key", s)
		if err != nil {
			return err
		}
		if err := h.client.SetRateLimit(ctx, hopper.RateLimit{Queue: name, Rate: rate, PerKey: true}); err != nil {
			return err
		}
	}
	return h.afterQueueChange(w, r, v, "Saved the settings of queue "+name+".")
}

func (h *Handler) afterQueueChange(w http.ResponseWriter, r *http.Request, v *view, notice string) error {
	v.Notice = notice
	return h.queues(w, r, v)
}

// kindCompact compacts the kind's groups with the merge policy the form names, recorded as
// done by an operator, and says what it did.
func (h *Handler) kindCompact(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("name")
	res, err := h.client.CompactKindBy(r.Context(), name, &hopper.CompactOpts{Merge: hopper.MergePolicy(r.PostFormValue("merge"))},
		hopper.ActorOperator)
	if err != nil {
		return err
	}
	notice := fmt.Sprintf("Compacted kind %s: %d groups, %d jobs replaced.", name, res.Groups, res.Jobs)
	for _, g := range res.Refused {
		notice += fmt.Sprintf(" Group %s left as it is: job %s: %s.", g.GroupKey, g.JobID, g.Reason)
	}
	return h.afterQueueChange(w, r, v, notice)
}
