package cli

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

func (r *remote) Schedules(ctx context.Context) ([]*hopper.ScheduleInfo, error) {
	res, err := r.sched.List(ctx, &hopperv1.ScheduleServiceListRequest{})
	if err != nil {
		return nil, remoteErr(err)
	}
	out := make([]*hopper.ScheduleInfo, len(res.GetSchedules()))
	for i, s := range res.GetSchedules() {
		out[i] = fromSchedule(s)
	}
	return out, nil
}

func (r *remote) AddSchedule(ctx context.Context, s hopper.Schedule) (*hopper.ScheduleInfo, error) {
	spec := &hopperv1.Schedule{
		Name: s.Name, Cron: s.Cron, Every: optDur(s.Every), FixedDelay: optDur(s.FixedDelay), Tz: s.TZ,
		Kind: s.Kind, Queue: s.Queue, Priority: int32(s.Priority), MaxAttempts: int32(s.MaxAttempts),
		Timeout: optDur(s.Timeout), Headers: s.Headers, CatchUp: string(s.CatchUp), Overlap: string(s.Overlap),
		Jitter: optDur(s.Jitter), Paused: s.Paused,
	}
	if raw, ok := s.Args.(json.RawMessage); ok {
		spec.Args = string(raw)
	}
	res, err := r.sched.Add(ctx, &hopperv1.ScheduleServiceAddRequest{Schedule: spec})
	if err != nil {
		return nil, remoteErr(err)
	}
	return fromSchedule(res.GetSchedule()), nil
}

func (r *remote) RemoveSchedule(ctx context.Context, name string) error {
	_, err := r.sched.Remove(ctx, &hopperv1.ScheduleServiceRemoveRequest{Name: name})
	return remoteErr(err)
}

func (r *remote) PauseSchedule(ctx context.Context, name string) error {
	_, err := r.sched.Pause(ctx, &hopperv1.ScheduleServicePauseRequest{Name: name})
	return remoteErr(err)
}

func (r *remote) ResumeSchedule(ctx context.Context, name string) error {
	_, err := r.sched.Resume(ctx, &hopperv1.ScheduleServiceResumeRequest{Name: name})
	return remoteErr(err)
}

func optDur(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

func fromSchedule(s *hopperv1.Schedule) *hopper.ScheduleInfo {
	return &hopper.ScheduleInfo{
		Schedule: hopper.Schedule{
			Name: s.GetName(), Cron: s.GetCron(), Every: s.GetEvery().AsDuration(),
			FixedDelay: s.GetFixedDelay().AsDuration(), TZ: s.GetTz(), Kind: s.GetKind(),
			Args: json.RawMessage(s.GetArgs()), Queue: s.GetQueue(), Priority: int(s.GetPriority()),
			MaxAttempts: int(s.GetMaxAttempts()), Timeout: s.GetTimeout().AsDuration(), Headers: s.GetHeaders(),
			CatchUp: hopper.CatchUp(s.GetCatchUp()), Overlap: hopper.Overlap(s.GetOverlap()),
			Jitter: s.GetJitter().AsDuration(), Paused: s.GetPaused(),
		},
		Source: s.GetSource(), LastFireAt: timeOf(s.GetLastFireAt()), NextFireAt: timeOf(s.GetNextFireAt()),
		LastJobID: s.GetLastJobId(), CreatedAt: timeOf(s.GetCreatedAt()), UpdatedAt: timeOf(s.GetUpdatedAt()),
	}
}
