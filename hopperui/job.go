package hopperui

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/hopperjobs/hopper"
)

type jobData struct {
	Job      *hopper.JobRow
	Attempts []*hopper.AttemptRecord
	Events   []*hopper.Event
	Replays  []*hopper.Replay // replays of this job
	// CompactedFrom are the jobs this job replaced in a compaction; CompactedInto the job
	// that replaced it.
	CompactedFrom []string
	CompactedInto string
	Headers       []header
	// Parents are the first maxLinks jobs it waits or waited for, of ParentCount; Children
	// the first maxLinks jobs that wait or waited for it, of ChildCount; Workflow, for a step
	// of a workflow, its workflow.
	Parents     []hopper.ParentResult
	ParentCount int
	Children    []*hopper.JobRow
	ChildCount  int
	Workflow    *hopper.WorkflowRow
	Stalled     bool
	// Unworked: a queued job that no worker this process knows of has asked for.
	Unworked *noWorker
}

type header struct{ Name, Value string }

// job is a job's page. Its live part (state, progress, heartbeat, lease) polls while the job
// has not ended; its requests read the job alone.
func (h *Handler) job(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	id := r.PathValue("id")
	job, err := h.client.Get(ctx, id)
	if err != nil {
		return err
	}
	if !job.State.Terminal() {
		v.live(h.cfg.Prefix+"/jobs/"+pathEscape(id), liveEvery)
	}
	d := &jobData{Job: job, Stalled: job.Stalled(v.Now, hopper.DefaultStalledAfter)}
	if job.State == hopper.StateQueued {
		if d.Unworked, err = h.unworked(ctx, job); err != nil {
			return err
		}
	}
	v.Title, v.Data = "Job "+job.ID, d
	if liveRequest(r) {
		h.render(w, r, http.StatusOK, "job", v)
		return nil
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
	d.Attempts, d.Events, d.Replays = attempts, events, replays.Replays
	if d.CompactedFrom, err = h.client.CompactedFrom(ctx, id); err != nil {
		return err
	}
	if d.CompactedInto, err = h.client.CompactedInto(ctx, id); err != nil {
		return err
	}
	if err := h.links(r, d); err != nil {
		return err
	}
	for k, val := range job.Headers {
		d.Headers = append(d.Headers, header{k, val})
	}
	sort.Slice(d.Headers, func(i, j int) bool { return d.Headers[i].Name < d.Headers[j].Name })
	h.render(w, r, http.StatusOK, "job", v)
	return nil
}

// maxLinks bounds the parents and the children a job's page lists; the rest are counted, and
// listed on their own pages.
const maxLinks = 20

// links fills in a job's lineage: its first parents and children, counted, and a step's
// workflow (its state and counts, without its steps). A workflow gone with its steps'
// retention leaves Workflow nil.
func (h *Handler) links(r *http.Request, d *jobData) error {
	ctx, job := r.Context(), d.Job
	var err error
	if d.Parents, d.ParentCount, err = h.client.ParentsUpTo(ctx, job.ID, maxLinks); err != nil {
		return err
	}
	if job.HasChildren {
		res, err := h.client.Children(ctx, job.ID, &hopper.ChildrenParams{Limit: maxLinks})
		if err != nil {
			return err
		}
		d.Children, d.ChildCount = res.Jobs, res.Total
	}
	if job.WorkflowID == "" {
		return nil
	}
	res, err := h.client.WorkflowSteps(ctx, job.WorkflowID, &hopper.WorkflowStepsParams{Limit: 1})
	if errors.Is(err, hopper.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	d.Workflow = res.Workflow
	return nil
}

// MoreParents and MoreChildren are how many of the job's parents and children its page does
// not list.
func (d *jobData) MoreParents() int  { return d.ParentCount - len(d.Parents) }
func (d *jobData) MoreChildren() int { return d.ChildCount - len(d.Children) }

func (h *Handler) jobCancel(w http.ResponseWriter, r *http.Request, v *view) error {
	id := r.PathValue("id")
	if _, err := h.client.CancelBy(r.Context(), id, hopper.ActorOperator, "dashboard cancel by "+v.User.Name); err != nil {
		return err
	}
	http.Redirect(w, r, h.cfg.Prefix+"/jobs/"+pathEscape(id), http.StatusSeeOther)
	return nil
}

func (h *Handler) jobReplay(w http.ResponseWriter, r *http.Request, v *view) error {
	job, err := h.client.ReplayWith(r.Context(), r.PathValue("id"), hopper.ReplayOpts{By: v.User.Name,
		Again: r.PostFormValue("again") == "yes"})
	if err != nil {
		return err
	}
	http.Redirect(w, r, h.cfg.Prefix+"/jobs/"+pathEscape(job.ID), http.StatusSeeOther)
	return nil
}

// jobRetry retries a failed job in place (contract 18), as the form says: more attempts
// (retries), a reason, and again for a dead letter that was replayed.
func (h *Handler) jobRetry(w http.ResponseWriter, r *http.Request, v *view) error {
	opts := hopper.RetryOpts{By: v.User.Name, Actor: hopper.ActorOperator, Again: r.PostFormValue("again") == "yes",
		Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	retries, _, err := formInt(r, "retries")
	if err != nil {
		return err
	}
	opts.Retries = retries
	job, err := h.client.RetryJob(r.Context(), r.PathValue("id"), opts)
	if err != nil {
		return err
	}
	http.Redirect(w, r, h.retriedTo(r, job), http.StatusSeeOther)
	return nil
}

// retriedTo is where a retry leads: the job's page, or its workflow's when the retry came from
// there (form field back=workflow).
func (h *Handler) retriedTo(r *http.Request, job *hopper.JobRow) string {
	if r.PostFormValue("back") == "workflow" && job.WorkflowID != "" {
		return h.cfg.Prefix + "/workflows/" + pathEscape(job.WorkflowID)
	}
	return h.cfg.Prefix + "/jobs/" + pathEscape(job.ID)
}
