package server

import (
	"context"
	"encoding/json"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// scheduleService implements hopper.v1.ScheduleService.
type scheduleService struct{ s *Server }

func (ss *scheduleService) List(ctx context.Context, _ *hopperv1.ScheduleServiceListRequest) (*hopperv1.ScheduleServiceListResponse, error) {
	list, err := ss.s.client.Schedules(ctx)
	if err != nil {
		return nil, rpcError("list schedules", err)
	}
	out := &hopperv1.ScheduleServiceListResponse{Schedules: make([]*hopperv1.Schedule, len(list))}
	for i, info := range list {
		out.Schedules[i] = toSchedule(info)
	}
	return out, nil
}

func (ss *scheduleService) Add(ctx context.Context, req *hopperv1.ScheduleServiceAddRequest) (*hopperv1.ScheduleServiceAddResponse, error) {
	spec := req.GetSchedule()
	if spec == nil {
		return nil, invalidArg("schedule", "is required")
	}
	info, err := ss.s.client.AddSchedule(ctx, fromSchedule(spec))
	if err != nil {
		return nil, rpcError("add schedule", err)
	}
	return &hopperv1.ScheduleServiceAddResponse{Schedule: toSchedule(info)}, nil
}

func (ss *scheduleService) Remove(ctx context.Context, req *hopperv1.ScheduleServiceRemoveRequest) (*hopperv1.ScheduleServiceRemoveResponse, error) {
	if err := ss.s.client.RemoveSchedule(ctx, req.GetName()); err != nil {
		return nil, rpcError("remove schedule", err)
	}
	return &hopperv1.ScheduleServiceRemoveResponse{}, nil
}

func (ss *scheduleService) Pause(ctx context.Context, req *hopperv1.ScheduleServicePauseRequest) (*hopperv1.ScheduleServicePauseResponse, error) {
	if err := ss.s.client.PauseSchedule(ctx, req.GetName()); err != nil {
		return nil, rpcError("pause schedule", err)
	}
	return &hopperv1.ScheduleServicePauseResponse{}, nil
}

func (ss *scheduleService) Resume(ctx context.Context, req *hopperv1.ScheduleServiceResumeRequest) (*hopperv1.ScheduleServiceResumeResponse, error) {
	if err := ss.s.client.ResumeSchedule(ctx, req.GetName()); err != nil {
		return nil, rpcError("resume schedule", err)
	}
	return &hopperv1.ScheduleServiceResumeResponse{}, nil
}

// fromSchedule reads a schedule to add; the client validates it.
func fromSchedule(s *hopperv1.Schedule) hopper.Schedule {
	out := hopper.Schedule{
		Name: s.GetName(), Cron: s.GetCron(), Every: fromDur(s.GetEvery()), FixedDelay: fromDur(s.GetFixedDelay()),
		TZ: s.GetTz(), Kind: s.GetKind(), Queue: s.GetQueue(), Priority: int(s.GetPriority()),
		MaxAttempts: int(s.GetMaxAttempts()), Timeout: fromDur(s.GetTimeout()), Headers: s.GetHeaders(),
		CatchUp: hopper.CatchUp(s.GetCatchUp()), Overlap: hopper.Overlap(s.GetOverlap()),
		Jitter: fromDur(s.GetJitter()), Paused: s.GetPaused(),
	}
	if s.GetArgs() != "" {
		out.Args = json.RawMessage(s.GetArgs())
	}
	return out
}

func toSchedule(info *hopper.ScheduleInfo) *hopperv1.Schedule {
	args, _ := info.Args.(json.RawMessage) // a ScheduleInfo's Args always is
	return &hopperv1.Schedule{
		Name: apiview.Text(info.Name), Cron: apiview.Text(info.Cron), Every: apiview.Duration(info.Every), FixedDelay: apiview.Duration(info.FixedDelay), Tz: apiview.Text(info.TZ),
		Kind: apiview.Text(info.Kind), Args: apiview.Payload(args), Queue: apiview.Text(info.Queue), Priority: int32(info.Priority),
		MaxAttempts: int32(info.MaxAttempts), Timeout: apiview.Duration(info.Timeout), Headers: apiview.Headers(info.Headers),
		CatchUp: string(info.CatchUp), Overlap: string(info.Overlap), Jitter: apiview.Duration(info.Jitter), Paused: info.Paused,
		Source: info.Source, LastFireAt: apiview.Time(info.LastFireAt), NextFireAt: apiview.Time(info.NextFireAt),
		LastJobId: info.LastJobID, CreatedAt: apiview.Time(info.CreatedAt), UpdatedAt: apiview.Time(info.UpdatedAt),
	}
}
