package hopperclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Schedules returns every schedule, with its last and next fire times. It needs the read
// scope.
func (c *Client) Schedules(ctx context.Context) ([]*hopper.ScheduleInfo, error) {
	res, err := c.schedules.List(ctx, &hopperv1.ScheduleServiceListRequest{})
	if err != nil {
		return nil, callErr("list schedules", err)
	}
	out := make([]*hopper.ScheduleInfo, len(res.GetSchedules()))
	for i, s := range res.GetSchedules() {
		out[i] = apispec.FromSchedule(s)
	}
	return out, nil
}

// GetSchedule returns one schedule, or an error wrapping hopper.ErrNotFound. The API lists
// schedules whole (there are few): it reads the list. It needs the read scope.
func (c *Client) GetSchedule(ctx context.Context, name string) (*hopper.ScheduleInfo, error) {
	list, err := c.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("schedule %q: %w", name, hopper.ErrNotFound)
}

// AddSchedule creates a schedule, or replaces the definition of the one with its name, as
// hopper.Client.AddSchedule does: s.Args is encoded as JSON (a json.RawMessage as it is) and
// s.Kind defaults to the Args' kind. Bad input is a *hopper.ValidationError; a schedule
// declared in the server's code is an error wrapping hopper.ErrDuplicate. It needs the admin
// scope.
func (c *Client) AddSchedule(ctx context.Context, s hopper.Schedule) (*hopper.ScheduleInfo, error) {
	spec, err := apispec.ScheduleSpec(s)
	if err != nil {
		return nil, fmt.Errorf("add schedule %s: %w", s.Name, err)
	}
	res, err := c.schedules.Add(ctx, &hopperv1.ScheduleServiceAddRequest{Schedule: spec})
	if err != nil {
		err = callErr("add schedule "+s.Name, err)
		var ve *hopper.ValidationError
		if errors.As(err, &ve) {
			ve.Field = apispec.FromScheduleField(ve.Field) // the refusal's own, read from the answer
		}
		return nil, err
	}
	return apispec.FromSchedule(res.GetSchedule()), nil
}

// RemoveSchedule deletes a schedule; jobs it enqueued stay. An unknown name is an error
// wrapping hopper.ErrNotFound. It needs the admin scope.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	_, err := c.schedules.Remove(ctx, &hopperv1.ScheduleServiceRemoveRequest{Name: name})
	return callErr("remove schedule "+name, err)
}

// PauseSchedule stops a schedule from firing until ResumeSchedule. It needs the admin scope.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	_, err := c.schedules.Pause(ctx, &hopperv1.ScheduleServicePauseRequest{Name: name})
	return callErr("pause schedule "+name, err)
}

// ResumeSchedule lets a paused schedule fire again, as its catch-up policy says. It needs the
// admin scope.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	_, err := c.schedules.Resume(ctx, &hopperv1.ScheduleServiceResumeRequest{Name: name})
	return callErr("resume schedule "+name, err)
}

// RunSchedule enqueues the schedule's job now, outside its timing, as
// hopper.Client.RunSchedule does; the job's history names this client's key. An unknown name
// is an error wrapping hopper.ErrNotFound. It needs the admin scope.
func (c *Client) RunSchedule(ctx context.Context, name string) (*hopper.JobRow, error) {
	res, err := c.schedules.Run(ctx, &hopperv1.ScheduleServiceRunRequest{Name: name})
	if err != nil {
		return nil, callErr("run schedule "+name, err)
	}
	return apiview.FromJob(res.GetJob()), nil
}
