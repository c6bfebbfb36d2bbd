package hopperui

import (
	"net/http"
	"net/url"

	"github.com/hopperjobs/hopper"
)

// A job's relatives, beyond the maxLinks its page lists: its children a page at a time, its
// parents (the first maxPage: a job names its parents in one list, which has no cursor).

type relativesData struct {
	Job *hopper.JobRow
	// Children or Parents (ParentsPage): one of them is listed, Total of it the job has.
	ParentsPage bool
	Children    []*hopper.JobRow
	Parents     []hopper.ParentResult
	Total       int
	NextURL     string
	Cursor      string
}

// More is how many the page does not list: beyond its parents' bound, or on later pages.
func (d *relativesData) More() int { return d.Total - len(d.Parents) - len(d.Children) }

// jobChildren lists the jobs that wait or waited for a job, stepPage at a time.
func (h *Handler) jobChildren(w http.ResponseWriter, r *http.Request, v *view) error {
	job, err := h.client.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	cursor := r.URL.Query().Get("cursor")
	res, err := h.client.Children(r.Context(), job.ID, &hopper.ChildrenParams{Cursor: cursor, Limit: stepPage})
	if err != nil {
		return err
	}
	d := &relativesData{Job: job, Children: res.Jobs, Total: res.Total, Cursor: cursor}
	if res.NextCursor != "" {
		d.NextURL = h.cfg.Prefix + "/jobs/" + pathEscape(job.ID) + "/children?" + url.Values{"cursor": {res.NextCursor}}.Encode()
	}
	v.Title, v.Data = "Jobs after "+job.ID, d
	h.render(w, r, http.StatusOK, "relatives", v)
	return nil
}

// jobParents lists the first maxPage jobs a job waits or waited for.
func (h *Handler) jobParents(w http.ResponseWriter, r *http.Request, v *view) error {
	job, err := h.client.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d := &relativesData{Job: job, ParentsPage: true}
	if d.Parents, d.Total, err = h.client.ParentsUpTo(r.Context(), job.ID, maxPage); err != nil {
		return err
	}
	v.Title, v.Data = "Jobs before "+job.ID, d
	h.render(w, r, http.StatusOK, "relatives", v)
	return nil
}
