package hopperui

import (
	"net/http"
	"sort"

	"github.com/hopperjobs/hopper"
)

type jobData struct {
	Job      *hopper.JobRow
	Attempts []*hopper.AttemptRecord
	Events   []*hopper.Event
	Replays  []*hopper.Replay // replays of this job
	Headers  []header
	Stalled  bool
}

type header struct{ Name, Value string }

// liveEvery is how often a job page that has not ended polls for its progress.
const liveEvery = "1s"

func (h *Handler) job(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	id := r.PathValue("id")
	job, err := h.client.Get(ctx, id)
	if err != nil {
		return err
	}
	attempts, err := h.client.Attempts(ctx, id)
	if err != nil {
		return err
	}
	events, err := h.client.Events(ctx, id)
	if err != nil {
		return err
	}
	replays, err := h.client.Replays(ctx, &hopper.ReplayListParams{SourceJobID: id, Limit: 100})
	if err != nil {
		return err
	}
	d := &jobData{Job: job, Attempts: attempts, Events: events, Replays: replays.Replays,
		Stalled: job.Stalled(v.Now, hopper.DefaultStalledAfter)}
	for k, val := range job.Headers {
		d.Headers = append(d.Headers, header{k, val})
	}
	sort.Slice(d.Headers, func(i, j int) bool { return d.Headers[i].Name < d.Headers[j].Name })
	v.Title, v.Data = "Job "+job.ID, d
	h.render(w, r, http.StatusOK, "job", v)
	return nil
}

// jobLive is the part of the job page that changes while the job runs (state, progress,
// heartbeat, lease), for htmx to swap in every liveEvery until the job ends.
func (h *Handler) jobLive(w http.ResponseWriter, r *http.Request, v *view) error {
	job, err := h.client.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	v.Data = &jobData{Job: job, Stalled: job.Stalled(v.Now, hopper.DefaultStalledAfter)}
	h.render(w, r, http.StatusOK, "job#live", v)
	return nil
}

func (h *Handler) jobCancel(w http.ResponseWriter, r *http.Request, v *view) error {
	id := r.PathValue("id")
	if _, err := h.client.CancelBy(r.Context(), id, hopper.ActorOperator, "dashboard cancel by "+v.User.Name); err != nil {
		return err
	}
	http.Redirect(w, r, h.cfg.Prefix+"/jobs/"+pathEscape(id), http.StatusSeeOther)
	return nil
}

func (h *Handler) jobReplay(w http.ResponseWriter, r *http.Request, v *view) error {
	job, err := h.client.Replay(r.Context(), r.PathValue("id"), v.User.Name)
	if err != nil {
		return err
	}
	http.Redirect(w, r, h.cfg.Prefix+"/jobs/"+pathEscape(job.ID), http.StatusSeeOther)
	return nil
}
