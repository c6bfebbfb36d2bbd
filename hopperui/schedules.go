package hopperui

import (
	"net/http"
	"time"

	"github.com/hopperjobs/hopper"
)

// nextFires is how many coming fire times the schedules page lists.
const nextFires = 3

type scheduleRow struct {
	*hopper.ScheduleInfo
	Next []time.Time // in the schedule's time zone
}

func (h *Handler) schedules(w http.ResponseWriter, r *http.Request, v *view) error {
	list, err := h.client.Schedules(r.Context())
	if err != nil {
		return err
	}
	rows := make([]*scheduleRow, len(list))
	for i, s := range list {
		rows[i] = &scheduleRow{ScheduleInfo: s, Next: s.NextFireTimes(nextFires)}
	}
	v.Title, v.Data = "Schedules", rows
	h.render(w, r, http.StatusOK, "schedules", v)
	return nil
}

func (h *Handler) schedulePause(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := h.client.PauseSchedule(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	v.Notice = "Paused schedule " + r.PathValue("name") + "."
	return h.schedules(w, r, v)
}

func (h *Handler) scheduleResume(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := h.client.ResumeSchedule(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	v.Notice = "Resumed schedule " + r.PathValue("name") + "."
	return h.schedules(w, r, v)
}

// scheduleRun enqueues the schedule's job now, recorded as the user's manual run; its next
// fire times stay as they are.
func (h *Handler) scheduleRun(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("name")
	job, err := h.client.RunScheduleBy(r.Context(), name, hopper.ActorOperator, "dashboard run now by "+v.User.Name)
	if err != nil {
		return err
	}
	v.Notice = "Ran schedule " + name + ": job " + job.ID + " is " + string(job.State) + "."
	if job.WorkflowID != "" {
		v.Notice = "Ran schedule " + name + ": workflow " + job.WorkflowID + " started."
	}
	return h.schedules(w, r, v)
}

// scheduleRemove removes a schedule (its jobs stay); one declared in code is refused.
func (h *Handler) scheduleRemove(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("name")
	if err := h.client.RemoveSchedule(r.Context(), name); err != nil {
		return err
	}
	v.Notice = "Removed schedule " + name + "; the jobs it enqueued stay."
	return h.schedules(w, r, v)
}
