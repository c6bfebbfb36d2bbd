package hopperui

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/hopperjobs/hopper"
)

type queuesData struct {
	Queues []*queueRow
	States []hopper.JobState
	Kinds  []*hopper.KindInfo
	// MaxKeyWeight bounds a fairness key's weight (the form's hint).
	MaxKeyWeight int
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
	v.Title, v.Data = "Queues", &queuesData{Queues: rows, States: states, Kinds: kinds, MaxKeyWeight: hopper.MaxKeyWeight}
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
	weight, set, err := formInt(r, "weight")
	if err != nil {
		return err
	}
	limits, err := limitsForm(r, hopper.Limit{Queue: name})
	if err != nil {
		return err
	}
	if set {
		if err := h.client.SetQueueWeight(ctx, name, weight); err != nil {
			return err
		}
	}
	if err := limits.apply(ctx, h.client); err != nil {
		return err
	}
	return h.afterQueueChange(w, r, v, "Saved the settings of queue "+name+".")
}

// kindSettings sets a kind's cap and rate limit, and its limits per fairness key, from the
// kinds table's form, as queueSettings does a queue's.
func (h *Handler) kindSettings(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("name")
	limits, err := limitsForm(r, hopper.Limit{Kind: name})
	if err != nil {
		return err
	}
	if err := limits.apply(r.Context(), h.client); err != nil {
		return err
	}
	return h.afterQueueChange(w, r, v, "Saved the settings of kind "+name+".")
}

// queueKeyWeight sets or removes (weight 0 or 1) the weight of one fairness key of a queue.
func (h *Handler) queueKeyWeight(w http.ResponseWriter, r *http.Request, v *view) error {
	name, key := r.PathValue("name"), r.PostFormValue("fairness_key")
	weight, set, err := formInt(r, "weight")
	if err != nil {
		return err
	}
	if !set {
		return invalid("weight", "is required (0 removes the key's weight)")
	}
	if err := h.client.SetKeyWeight(r.Context(), name, key, weight); err != nil {
		return err
	}
	if weight <= 1 {
		return h.afterQueueChange(w, r, v, fmt.Sprintf("Removed the weight of key %s in queue %s.", key, name))
	}
	return h.afterQueueChange(w, r, v, fmt.Sprintf("Key %s of queue %s weighs %d.", key, name, weight))
}

// limitsChange is what a settings form asks of a queue's or a kind's caps and rate limits,
// read and checked before any of it is stored.
type limitsChange struct {
	caps  []hopper.Limit
	rates []hopper.RateLimit
}

// limitsForm reads the form's max_running, rate, cap_per_key and rate_per_key for the queue
// or kind of to (an empty field: leave it alone; 0 removes it). A field that is not a number
// or a rate is a *hopper.ValidationError naming it.
func limitsForm(r *http.Request, to hopper.Limit) (*limitsChange, error) {
	var c limitsChange
	for _, f := range []struct {
		cap, rate string
		perKey    bool
	}{{"max_running", "rate", false}, {"cap_per_key", "rate_per_key", true}} {
		n, set, err := formInt(r, f.cap)
		if err != nil {
			return nil, err
		}
		if set {
			c.caps = append(c.caps, hopper.Limit{Queue: to.Queue, Kind: to.Kind, MaxRunning: n, PerKey: f.perKey})
		}
		if s := strings.TrimSpace(r.PostFormValue(f.rate)); s != "" {
			rate, err := hopper.ParseRate(f.rate, s)
			if err != nil {
				return nil, err
			}
			c.rates = append(c.rates, hopper.RateLimit{Queue: to.Queue, Kind: to.Kind, Rate: rate, PerKey: f.perKey})
		}
	}
	return &c, nil
}

// apply stores the change through the client, which checks each limit's range.
func (c *limitsChange) apply(ctx context.Context, client *hopper.Client) error {
	for _, l := range c.caps {
		if err := client.SetLimit(ctx, l); err != nil {
			return err
		}
	}
	for _, l := range c.rates {
		if err := client.SetRateLimit(ctx, l); err != nil {
			return err
		}
	}
	return nil
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
