package hopperui

import (
	"net/http"

	"github.com/hopperjobs/hopper"
)

// nextFires is how many coming fire times the schedules page lists.
const nextFires = 3

type scheduleRow struct {
	*hopper.ScheduleInfo
	Next []string
}

func (h *Handler) schedules(w http.ResponseWriter, r *http.Request, v *view) error {
	list, err := h.client.Schedules(r.Context())
	if err != nil {
		return err
	}
	rows := make([]*scheduleRow, len(list))
	for i, s := range list {
		rows[i] = &scheduleRow{ScheduleInfo: s}
		for _, t := range s.NextFireTimes(nextFires) {
			rows[i].Next = append(rows[i].Next, t.Format("2006-01-02 15:04:05 MST"))
		}
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
