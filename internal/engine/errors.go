package engine

import (
	"errors"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/store"
)

// ParkParams is the outcome of an attempt of job id under token that ended with a snooze or
// a suspension, or nil for other errors.
func ParkParams(id string, token int64, err error, now time.Time) *store.FinishParams {
	var sn *attempt.SnoozeError
	var su *attempt.SuspendError
	switch {
	case errors.As(err, &sn):
		return &store.FinishParams{ID: id, Token: token, State: hoppertype.StateScheduled,
			RunAt: now.Add(max(sn.Delay, 0)), GiveBack: true, Outcome: hoppertype.OutcomeSnoozed,
			Actor: hoppertype.ActorWorker, Reason: sn.Error()}
	case errors.As(err, &su):
		p := &store.FinishParams{ID: id, Token: token, GiveBack: true, Checkpoint: su.Checkpoint,
			Outcome: hoppertype.OutcomeSuspended, Actor: hoppertype.ActorWorker, Reason: su.Error()}
		if su.Until.IsZero() {
			p.State, p.DeadlineAt = hoppertype.StateSuspended, su.Deadline
		} else {
			p.State, p.RunAt = hoppertype.StateScheduled, su.Until
		}
		return p
	}
	return nil
}
