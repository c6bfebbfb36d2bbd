package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
)

// Resume moves a suspended job (see Suspend) back to its queue. data, when not nil, is
// encoded as JSON and handed to the next attempt as Job.ResumeData, beside the checkpoint the
// job left; the attempt may run on any node. A job that is not suspended gets
// ErrInvalidTransition; an unknown one ErrNotFound.
func (c *Client) Resume(ctx context.Context, id string, data any) (*JobRow, error) {
	return c.ResumeBy(ctx, id, data, ActorAPI, "resumed")
}

// ResumeBy is Resume recording who resumed the job and why in its history.
func (c *Client) ResumeBy(ctx context.Context, id string, data any, actor Actor, reason string) (*JobRow, error) {
	var raw json.RawMessage
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(d) {
			return nil, invalid("data", "is not valid JSON")
		}
		raw = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return nil, invalid("data", "does not encode as JSON: %v", err)
		}
		raw = b
	}
	if len(raw) > c.cfg.MaxArgsBytes {
		return nil, invalid("data", "is %d bytes, more than the limit of %d", len(raw), c.cfg.MaxArgsBytes)
	}
	ss, ok := c.store.(store.SuspendStore)
	if !ok {
		return nil, errors.New("resume: this store cannot resume jobs")
	}
	job, err := ss.JobResume(ctx, &store.ResumeParams{ID: id, Data: raw, Actor: actor, Reason: store.CleanText(reason)})
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	c.engine.Notify(job.Queue)
	return job, nil
}
