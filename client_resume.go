package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// Resume moves a suspended job (see Suspend) back to its queue. data, when not nil, is
// encoded as JSON and handed to the next attempt as Job.ResumeData, beside the checkpoint the
// job left; the attempt may run on any node. A job that is not suspended gets
// ErrInvalidTransition (after waiting up to 2 s when the job is running: its handler may be
// about to suspend, and a suspension is written a moment after the handler returns); an
// unknown one ErrNotFound.
func (c *Client) Resume(ctx context.Context, id string, data any) (*JobRow, error) {
	return c.ResumeBy(ctx, id, data, ActorAPI, "resumed")
}

// ResumeBy is Resume recording who resumed the job and why in its history.
func (c *Client) ResumeBy(ctx context.Context, id string, data any, actor Actor, reason string) (*JobRow, error) {
	if err := checkChange(id, actor, reason); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		raw = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return nil, invalid("data", "does not encode as JSON: %v", err)
		}
		raw = b
	}
	if raw != nil {
		if err := checkJSON("data", raw); err != nil {
			return nil, err
		}
	}
	if len(raw) > c.cfg.MaxArgsBytes {
		return nil, invalid("data", "is %d bytes, more than the limit of %d", len(raw), c.cfg.MaxArgsBytes)
	}
	params := &store.ResumeParams{ID: id, Data: raw, Actor: actor, Reason: reason}
	job, err := c.store.JobResume(ctx, params)
	// A handler's suspension is written a moment after it returns (outcomes are batched): a
	// resume that races it finds the job still running. Give the suspension that moment.
	// (Real time, not the client's clock: this waits for goroutines, not for the schedule.)
	deadline := time.Now().Add(resumeRaceWait)
	for errors.Is(err, ErrInvalidTransition) && time.Now().Before(deadline) {
		// The suspension may land between the refused resume and this look: a job no longer
		// running gets one more try, whose answer is final.
		running := c.stillRunning(ctx, id)
		if running {
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("resume: %w", ctx.Err())
			case <-t.C:
			}
		}
		job, err = c.store.JobResume(ctx, params)
		if !running {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	c.engine.Notify(job.Queue)
	return job, nil
}

// resumeRaceWait is how long Resume waits for a running job's suspension to be written.
const resumeRaceWait = 2 * time.Second

func (c *Client) stillRunning(ctx context.Context, id string) bool {
	job, err := c.store.JobGet(ctx, id)
	return err == nil && job.State == StateRunning
}
