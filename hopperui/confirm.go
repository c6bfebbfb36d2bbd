package hopperui

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/hopperjobs/hopper"
)

// Destructive and bulk changes ask first: a POST without confirmField set to "yes" changes
// nothing and answers with a page that says what the change would do (how many jobs, which)
// and offers to post the same form again, confirmed, or to go back. It works without script,
// so the Content-Security-Policy stays strict (htmx's hx-confirm only guards requests htmx
// makes, and the dashboard's forms are plain forms), and a bulk action's page can count the
// jobs it would change, which a dialog in the browser cannot.

// confirmField is the form field that confirms a change.
const confirmField = "confirm"

// confirmation is what a change asks before it is made.
type confirmation struct {
	Question string   // "Cancel job 0193…?"
	Details  []string // what the change does, line by line
	IDs      []string // the jobs it changes (at most maxListed shown)
	More     int      // how many more than those shown
	Button   string   // the confirming button's label
	Danger   bool     // the button is marked dangerous
	Action   string   // the form's action: the URL posted to
	Fields   []formField
	Back     string // where going back leads
}

type formField struct{ Name, Value string }

// maxListed bounds the job ids a confirmation lists.
const maxListed = 20

// askFunc says what the change r asks for would do. An error (bad input, an unknown job)
// skips the question: the change itself refuses the request and says why.
type askFunc func(r *http.Request, v *view) (*confirmation, error)

// confirmed wraps a change so that it runs only once confirmed.
func (h *Handler) confirmed(ask askFunc, change pageFunc) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *view) error {
		if err := r.ParseForm(); err != nil {
			return invalid("form", "%v", err)
		}
		if r.PostForm.Get(confirmField) == "yes" {
			return change(w, r, v)
		}
		c, err := ask(r, v)
		if err != nil {
			return change(w, r, v)
		}
		c.Action = r.URL.Path
		for _, name := range sortedKeys(r.PostForm) {
			for _, val := range r.PostForm[name] {
				c.Fields = append(c.Fields, formField{name, val})
			}
		}
		if len(c.IDs) > maxListed {
			c.More, c.IDs = len(c.IDs)-maxListed, c.IDs[:maxListed]
		}
		v.Title, v.Data = "Confirm", c
		h.render(w, r, http.StatusOK, "confirm", v)
		return nil
	}
}

func sortedKeys(form url.Values) []string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// askCancel asks before a job is canceled.
func (h *Handler) askCancel(r *http.Request, _ *view) (*confirmation, error) {
	job, err := h.client.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if job.State.Terminal() {
		return nil, fmt.Errorf("job %s has ended", job.ID) // the cancel refuses it
	}
	what := "It will not run."
	if job.State == hopper.StateRunning {
		what = "Its handler is told to stop (its context is canceled), and it will not run again."
	}
	return &confirmation{Question: fmt.Sprintf("Cancel job %s?", job.ID),
		Details: []string{fmt.Sprintf("A %s job of kind %s in queue %s.", job.State, job.Kind, job.Queue), what},
		Button:  "Cancel the job", Danger: true, Back: h.cfg.Prefix + "/jobs/" + pathEscape(job.ID)}, nil
}

// lastReplay is the newest replay of dead letter id, nil when it was never replayed.
func (h *Handler) lastReplay(r *http.Request, id string) (*hopper.Replay, error) {
	log, err := h.client.Replays(r.Context(), &hopper.ReplayListParams{SourceJobID: id, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, rp := range log.Replays { // newest first
		if rp.Action == hopper.ActionReplay {
			return rp, nil
		}
	}
	return nil, nil
}

// askRetry asks before a failed job is retried in place, saying what happens; for a dead
// letter that was replayed it names the replay and confirms with again.
func (h *Handler) askRetry(r *http.Request, _ *view) (*confirmation, error) {
	job, err := h.client.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if job.State != hopper.StateFailed {
		return nil, fmt.Errorf("job %s is %s", job.ID, job.State) // the retry refuses it
	}
	more := strings.TrimSpace(r.PostForm.Get("retries"))
	if more == "" {
		more = strconv.Itoa(hopper.DefaultRetryAttempts)
	}
	c := &confirmation{Question: fmt.Sprintf("Retry job %s in place?", job.ID),
		Details: []string{fmt.Sprintf("The same job (kind %s) goes back to queue %s with %s more attempt(s), after the %d it made.",
			job.Kind, job.Queue, more, job.Attempt),
			"Its id, idempotency key, args and history stay; the audit log records the retry, with your name."},
		Button: "Retry it", Back: h.retriedTo(r, job)}
	last, err := h.lastReplay(r, job.ID)
	if err != nil {
		return nil, err
	}
	if last != nil {
		c.Danger = true
		c.Details = append(c.Details, fmt.Sprintf("It was replayed already, as job %s by %s: retrying it too runs its work twice.",
			last.NewJobID, last.ReplayedBy))
		c.Fields = append(c.Fields, formField{"again", "yes"})
	}
	return c, nil
}

// askReplay asks before a dead letter that was replayed is replayed again (a second job for
// one failure); a first replay needs no question.
func (h *Handler) askReplay(r *http.Request, _ *view) (*confirmation, error) {
	id := r.PathValue("id")
	last, err := h.lastReplay(r, id)
	if err != nil {
		return nil, err
	}
	if last == nil {
		return nil, fmt.Errorf("job %s was never replayed", id) // no question: replay it
	}
	return &confirmation{Question: fmt.Sprintf("Replay job %s again?", id),
		Details: []string{fmt.Sprintf("It was replayed already, as job %s by %s: another replay runs its work a second time.",
			last.NewJobID, last.ReplayedBy), "The audit log records this replay as forced, with your name."},
		Button: "Replay it again", Danger: true, Back: h.cfg.Prefix + "/jobs/" + pathEscape(id),
		Fields: []formField{{"again", "yes"}}}, nil
}

// askBulk asks before a bulk action, naming the jobs it would change now.
func (h *Handler) askBulk(r *http.Request, _ *view) (*confirmation, error) {
	action := r.PostForm.Get("action")
	ids, err := h.bulkTargets(r, action)
	if err != nil {
		return nil, err
	}
	f, err := readFilter(r.PostForm)
	if err != nil {
		return nil, err
	}
	f.Cursor, f.Limit = "", defaultPage
	c := &confirmation{IDs: ids, Back: h.cfg.Prefix + "/jobs?" + f.query("")}
	n := len(ids)
	switch action {
	case "cancel":
		c.Question, c.Button, c.Danger = fmt.Sprintf("Cancel the %d ticked job(s)?", n), "Cancel them", true
		c.Details = []string{"Jobs that have ended already are skipped."}
	case "retry":
		c.Question, c.Button = fmt.Sprintf("Retry the %d ticked job(s) in place?", n), "Retry them"
		c.Details = []string{"Each failed job goes back to its queue with one more attempt, keeping its id, idempotency key and history; the others are skipped.",
			"The audit log records each retry, with your name."}
	case "replay":
		c.Question, c.Button = fmt.Sprintf("Replay the %d ticked job(s)?", n), "Replay them"
		c.Details = []string{"Each failed job is replayed as a new job that runs again; the others are skipped."}
	case "cancel-filter":
		c.Question, c.Button, c.Danger = fmt.Sprintf("Cancel the %d job(s) the search finds now?", n), "Cancel them", true
		c.Details = []string{"Search: " + f.describe() + ".", "Jobs that have ended already are skipped."}
	case "retry-filter":
		c.Question, c.Button = fmt.Sprintf("Retry in place the %d failed job(s) the search finds now?", n), "Retry them"
		c.Details = []string{"Search: " + f.describe() + ".",
			"Each goes back to its queue with one more attempt, keeping its id, idempotency key and history."}
	case "replay-filter":
		c.Question, c.Button = fmt.Sprintf("Replay the %d failed job(s) the search finds now?", n), "Replay them"
		c.Details = []string{"Search: " + f.describe() + ".", "Each is replayed as a new job that runs again."}
	}
	if n == 0 {
		c.Details = append(c.Details, "It changes nothing now.")
	}
	return c, nil
}

// describe is the search in words.
func (f jobFilter) describe() string {
	var parts []string
	for _, p := range []struct{ name, value string }{{"kind", f.Kind}, {"queue", f.Queue}, {"state", f.State},
		{"created from", f.From}, {"created before", f.To}, {"args contain", f.Text}} {
		if p.value != "" {
			parts = append(parts, fmt.Sprintf("%s %q", p.name, p.value))
		}
	}
	if len(parts) == 0 {
		return "every job"
	}
	return strings.Join(parts, ", ")
}

// askReplayAll asks before the dead letters never replayed are replayed.
func (h *Handler) askReplayAll(r *http.Request, _ *view) (*confirmation, error) {
	queue, kind := strings.TrimSpace(r.PostForm.Get("queue")), strings.TrimSpace(r.PostForm.Get("kind"))
	limit := hopper.DefaultReplayLimit
	if s := strings.TrimSpace(r.PostForm.Get("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > hopper.MaxReplayLimit {
			return nil, invalid("limit", "%q", s) // the replay names the field
		}
		limit = n
	}
	of := ""
	if queue != "" {
		of += fmt.Sprintf(" of queue %q", queue)
	}
	if kind != "" {
		of += fmt.Sprintf(" of kind %q", kind)
	}
	back := url.Values{}
	for k, val := range map[string]string{"queue": queue, "kind": kind} {
		if val != "" {
			back.Set(k, val)
		}
	}
	return &confirmation{Question: fmt.Sprintf("Replay up to %d dead letter(s)%s?", limit, of),
		Details: []string{"The dead letters never replayed, oldest first: each is replayed as a new job that runs again.",
			"The replay audit log records each one, with your name."},
		Button: "Replay them", Back: h.cfg.Prefix + "/dead-letters?" + back.Encode()}, nil
}

// askScheduleRun asks before a schedule's job is enqueued by hand.
func (h *Handler) askScheduleRun(r *http.Request, _ *view) (*confirmation, error) {
	s, err := h.client.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	queue := s.Queue
	if queue == "" {
		queue = hopper.DefaultQueue
	}
	return &confirmation{Question: fmt.Sprintf("Run schedule %s now?", s.Name),
		Details: []string{fmt.Sprintf("It enqueues a job of kind %s in queue %s now, as a fire would.", s.Kind, queue),
			"Its next fire times stay as they are."},
		Button: "Run it now", Back: h.cfg.Prefix + "/schedules"}, nil
}

// askScheduleRemove asks before a schedule is removed.
func (h *Handler) askScheduleRemove(r *http.Request, _ *view) (*confirmation, error) {
	s, err := h.client.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	if s.Source == hopper.ScheduleSourceCode {
		return nil, hopper.ErrScheduleInCode // the removal refuses it
	}
	return &confirmation{Question: fmt.Sprintf("Remove schedule %s?", s.Name),
		Details: []string{"It will not fire again; the jobs it enqueued stay."},
		Button:  "Remove it", Danger: true, Back: h.cfg.Prefix + "/schedules"}, nil
}

// askCompact asks before a kind's groups are compacted.
func (h *Handler) askCompact(r *http.Request, _ *view) (*confirmation, error) {
	name := r.PathValue("name")
	merge := hopper.MergePolicy(r.PostFormValue("merge"))
	if merge == "" {
		merge = hopper.MergeKeep
	}
	if !merge.Valid() {
		return nil, fmt.Errorf("merge policy %q", merge) // the compaction refuses it
	}
	args := map[hopper.MergePolicy]string{
		hopper.MergeKeep:    "the oldest job's args",
		hopper.MergeReplace: "the newest job's args",
		hopper.MergeAppend:  "the items of every job's list, oldest first",
	}[merge]
	return &confirmation{Question: fmt.Sprintf("Compact the queued jobs of kind %s?", name),
		Details: []string{
			fmt.Sprintf("In each group of kind %s in which two or more jobs wait (queued, never claimed), those jobs are replaced by one new job with %s (merge policy %s).", name, args, merge),
			"The replaced jobs end canceled, compacted into the new job. Jobs claimed meanwhile are left alone.",
		},
		Button: "Compact", Danger: true, Back: h.cfg.Prefix + "/queues"}, nil
}
