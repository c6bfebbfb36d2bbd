package hopper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// The on-dead-letter hook (contract 11): Config.OnDeadLetter and Config.DeadLetterWebhook hear
// of every job this client's engine moves to failed, after the failed state is committed. Each
// runs in its own goroutine the client owns, fed by its own bounded queue, so a slow or broken
// hook can neither hold up outcomes, nor hold up the other, nor change the dead letter: it
// only ever reads the job. A lane reads each dead letter before it hands it on; while the
// store is unavailable it retries the read with backoff (and logs the outage once), so an
// outage delays notifications instead of losing them.

// Limits of the on-dead-letter hook.
const (
	deadLetterQueueSize = 1000
	webhookTimeout      = 5 * time.Second
	webhookTries        = 3
	// hookStopGrace is how long Stop waits, once its ctx has ended, for a hook call that does
	// not return when its context is canceled.
	hookStopGrace = 500 * time.Millisecond
)

// webhookPolicy spaces the webhook's tries: about 1 s, then 2 s.
var webhookPolicy = hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: 30 * time.Second, Jitter: 0.2}

// deadLetterHook delivers dead-letter notifications. Start it once and stop it once.
type deadLetterHook struct {
	fn      func(ctx context.Context, job *JobRow)
	webhook string
	http    *http.Client
	store   Store
	log     *slog.Logger
	clock   Clock                  // the client's: retries wait on it
	policy  hoppertype.RetryPolicy // spaces the webhook's tries

	lanes   []*hookLane // the Go hook's and the webhook's, each with its own queue
	closing chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once
}

// hookLane is one consumer of dead-letter notifications.
type hookLane struct {
	name    string
	queue   chan string // ids of failed jobs
	done    chan struct{}
	deliver func(job *JobRow)
	reads   *backoff.Tracker // the reads of dead letters, retried while the store is unavailable
	lost    atomic.Int32     // notifications given up at Stop while their read was retried
}

// newDeadLetterHook returns nil when cfg sets neither a hook nor a webhook.
func newDeadLetterHook(cfg Config) *deadLetterHook {
	if cfg.OnDeadLetter == nil && cfg.DeadLetterWebhook == "" {
		return nil
	}
	log := logger(cfg.Logger)
	h := &deadLetterHook{
		fn: cfg.OnDeadLetter, webhook: cfg.DeadLetterWebhook, http: &http.Client{Timeout: webhookTimeout},
		store: cfg.Store, log: log, clock: clock.OrReal(cfg.Clock), policy: webhookPolicy,
		closing: make(chan struct{}),
	}
	lane := func(name string, deliver func(*JobRow)) {
		reads := backoff.New(backoff.Config{Name: name + ": read dead letters", Clock: h.clock, Logger: log})
		h.lanes = append(h.lanes, &hookLane{name: name, queue: make(chan string, deadLetterQueueSize),
			done: make(chan struct{}), deliver: deliver, reads: reads})
	}
	if h.fn != nil {
		lane("on-dead-letter hook", h.call)
	}
	if h.webhook != "" {
		lane("dead-letter webhook", h.post)
	}
	return h
}

// outcome is the engine's OnOutcome: it queues each failure the store accepted. It never
// blocks: a full queue drops the notification, with a log.
func (h *deadLetterHook) outcome(p *store.FinishParams, err error) {
	if err != nil || p.State != hoppertype.StateFailed {
		return
	}
	for _, l := range h.lanes {
		select {
		case l.queue <- p.ID:
		default:
			h.log.Warn(l.name+" queue full: notification dropped", "job_id", p.ID)
		}
	}
}

func (h *deadLetterHook) start() {
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for _, l := range h.lanes {
		go h.run(l)
	}
}

func (h *deadLetterHook) run(l *hookLane) {
	defer close(l.done)
	for {
		select {
		case id := <-l.queue:
			h.deliver(l, id)
		case <-h.closing:
			for { // deliver what was queued before Stop, unless Stop gives up
				select {
				case id := <-l.queue:
					h.deliver(l, id)
				default:
					return
				}
			}
		}
		if h.ctx.Err() != nil {
			return
		}
	}
}

// allDone is closed once every lane has returned.
func (h *deadLetterHook) allDone() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for _, l := range h.lanes {
			<-l.done
		}
		close(done)
	}()
	return done
}

// stop delivers what is queued until ctx ends, then cancels the calls in flight.
func (h *deadLetterHook) stop(ctx context.Context) {
	h.once.Do(func() { close(h.closing) })
	done := h.allDone()
	select {
	case <-done:
		h.cancel()
		return
	case <-ctx.Done():
	}
	h.cancel()
	grace := time.NewTimer(hookStopGrace) // real time: this bounds a shutdown
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		h.log.Error("on-dead-letter hook did not return after Stop canceled it")
	}
	for _, l := range h.lanes {
		if n := len(l.queue) + int(l.lost.Load()); n > 0 {
			h.log.Warn(l.name+": notifications dropped at Stop", "jobs", n)
		}
	}
}

// deliver reads the dead letter and hands it to the lane's consumer. While the store is
// unavailable the read is retried with backoff on the client's clock (the lane's Tracker
// logs the outage once, not each try), until it works or Stop gives up; the lane's later
// notifications wait in its queue meanwhile. A read that fails otherwise (the job is gone)
// drops this notification, with a log line.
func (h *deadLetterHook) deliver(l *hookLane, id string) {
	for {
		job, err := h.store.JobGet(h.ctx, id)
		switch {
		case err == nil:
			l.reads.Succeed()
			l.deliver(job)
			return
		case h.ctx.Err() != nil:
			l.lost.Add(1)
			return
		case !errors.Is(err, ErrUnavailable):
			l.reads.Succeed() // the store answered
			h.log.Error(l.name+": read dead letter", "job_id", id, "err", err)
			return
		}
		if !h.sleep(l.reads.Fail(err)) {
			l.lost.Add(1)
			return
		}
	}
}

// sleep waits d on the client's clock; false when Stop gave up first.
func (h *deadLetterHook) sleep(d time.Duration) bool {
	t := h.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-h.ctx.Done():
		return false
	}
}

// call runs the Go hook on a copy of the job, recovering a panic.
func (h *deadLetterHook) call(job *JobRow) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("on-dead-letter hook panicked", "job_id", job.ID, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	cp := *job
	h.fn(h.ctx, &cp)
}

// post sends the job to the webhook, trying again after a transport error, a 429 or a 5xx,
// with the delays of h.policy (on the client's clock).
func (h *deadLetterHook) post(job *JobRow) {
	body, err := json.Marshal(newDeadLetterJSON(job))
	if err != nil {
		h.log.Error("dead-letter webhook: encode job", "job_id", job.ID, "err", err)
		return
	}
	for try := 1; ; try++ {
		retry, err := h.postOnce(body)
		if err == nil {
			return
		}
		if !retry || try == webhookTries || h.ctx.Err() != nil || !h.sleep(backoff.Delay(h.policy, try, nil)) {
			h.log.Error("dead-letter webhook failed", "job_id", job.ID, "tries", try, "err", err)
			return
		}
	}
}

func (h *deadLetterHook) postOnce(body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, h.webhook, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hopper-dead-letter-webhook")
	resp, err := h.http.Do(req)
	if err != nil {
		return true, err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("status %s", resp.Status)
	}
	return false, fmt.Errorf("status %s", resp.Status)
}

// deadLetterJSON is what the webhook receives: the dead letter in the JSON shape of the CLI
// and the API (snake_case, RFC 3339 times, zero values left out).
type deadLetterJSON struct {
	Event       string            `json:"event"`
	ID          string            `json:"id"`
	Kind        string            `json:"kind"`
	Queue       string            `json:"queue"`
	State       string            `json:"state"`
	Args        json.RawMessage   `json:"args"`
	Headers     map[string]string `json:"headers,omitempty"`
	Attempt     int               `json:"attempt"`
	MaxAttempts int               `json:"max_attempts"`
	LastError   string            `json:"last_error,omitempty"`
	OriginalID  string            `json:"original_id,omitempty"`
	ReplayCount int               `json:"replay_count,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	FinishedAt  time.Time         `json:"finished_at"`
	ExpiresAt   *time.Time        `json:"expires_at,omitempty"`
}

func newDeadLetterJSON(j *JobRow) *deadLetterJSON {
	out := &deadLetterJSON{
		Event: "dead_letter", ID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State), Args: j.Args,
		Headers: j.Headers, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, LastError: j.LastError,
		OriginalID: j.OriginalID, ReplayCount: j.ReplayCount, CreatedAt: j.CreatedAt, FinishedAt: j.FinishedAt,
	}
	if !j.ExpiresAt.IsZero() {
		out.ExpiresAt = &j.ExpiresAt
	}
	if len(out.Args) == 0 || !json.Valid(out.Args) {
		out.Args = json.RawMessage("null")
	}
	return out
}

// checkWebhook validates Config.DeadLetterWebhook.
func checkWebhook(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("Config.DeadLetterWebhook", "%q is not an http or https URL", raw)
	}
	return nil
}
