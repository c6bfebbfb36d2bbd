package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// SuspendStore ends suspensions (contract 13): Resume moves a suspended job back to queued
// with data for its next attempt; the leader fails jobs still suspended at their deadline.
// Both stores implement it.
type SuspendStore interface {
	// JobResume moves a suspended job to queued, storing Data (nil keeps none) as its resume
	// data. ErrNotFound for an unknown job, ErrInvalidTransition for one not suspended.
	JobResume(ctx context.Context, p *ResumeParams) (*hoppertype.JobRow, error)
	// JobFailOverdue fails at most Limit suspended jobs whose deadline has passed, setting
	// ExpiresAt (the dead-letter retention), and returns their ids.
	JobFailOverdue(ctx context.Context, p *OverdueParams) ([]string, error)
}

// ResumeParams resumes one suspended job.
type ResumeParams struct {
	ID     string
	Data   json.RawMessage
	Actor  hoppertype.Actor
	Reason string
}

// OverdueParams bounds one pass of JobFailOverdue.
type OverdueParams struct {
	Limit     int
	ExpiresAt time.Time // when the failed record may be removed; zero keeps none
}
