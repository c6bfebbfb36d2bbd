package hopperui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hopperjobs/hopper"
)

type deadLettersData struct {
	Stats       *hopper.DeadLetterStats
	DeadLetters []*hopper.DeadLetter
	NextURL     string
	Replays     []*hopper.Replay
	Queue       string
	Kind        string
	// IncludeReplayed lists the replayed dead letters too (marked), as ?replayed=1 asks.
	IncludeReplayed bool
	ReplayMax       int
	ReplayDflt      int
}

func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	q := r.URL.Query()
	d := &deadLettersData{Queue: strings.TrimSpace(q.Get("queue")), Kind: strings.TrimSpace(q.Get("kind")),
		IncludeReplayed: q.Get("replayed") == "1", ReplayMax: hopper.MaxReplayLimit, ReplayDflt: hopper.DefaultReplayLimit}
	stats, err := h.client.DeadLetterStats(ctx)
	if err != nil {
		return err
	}
	d.Stats = stats
	p := &hopper.DeadLetterParams{Cursor: q.Get("cursor"), Limit: defaultPage, DeadLetterFilter: d.filter(),
		IncludeReplayed: d.IncludeReplayed}
	page, err := h.client.DeadLetters(ctx, p)
	if err != nil {
		return err
	}
	d.DeadLetters = page.DeadLetters
	if page.NextCursor != "" {
		next := url.Values{"cursor": {page.NextCursor}, "queue": {d.Queue}, "kind": {d.Kind}}
		if d.IncludeReplayed {
			next.Set("replayed", "1")
		}
		d.NextURL = "?" + next.Encode()
	}
	replays, err := h.client.Replays(ctx, &hopper.ReplayListParams{Limit: 20})
	if err != nil {
		return err
	}
	d.Replays = replays.Replays
	v.Title, v.Data = "Dead letters", d
	h.render(w, r, http.StatusOK, "deadletters", v)
	return nil
}

func (d *deadLettersData) filter() hopper.DeadLetterFilter {
	var f hopper.DeadLetterFilter
	if d.Queue != "" {
		f.Queues = []string{d.Queue}
	}
	if d.Kind != "" {
		f.Kinds = []string{d.Kind}
	}
	return f
}

// deadLettersReplay replays the dead letters of the form's queue and kind that were never
// replayed, oldest first, at most limit (hopper.Client.ReplayMany: bounded, one transaction,
// each replay in the audit log).
func (h *Handler) deadLettersReplay(w http.ResponseWriter, r *http.Request, v *view) error {
	d := &deadLettersData{Queue: strings.TrimSpace(r.PostFormValue("queue")), Kind: strings.TrimSpace(r.PostFormValue("kind"))}
	limit, _, err := formInt(r, "limit")
	if err != nil {
		return err
	}
	res, err := h.client.ReplayMany(r.Context(), d.filter(), limit, v.User.Name)
	if err != nil {
		return err
	}
	v.Notice = "Replayed " + strconv.Itoa(len(res.Jobs)) + " dead letter(s)."
	if res.Skipped > 0 {
		v.Notice += " Skipped " + strconv.Itoa(res.Skipped) + " replayed before."
	}
	return h.deadLetters(w, r, v)
}
