package server

import (
	"context"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
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
		out.Schedules[i] = apispec.Schedule(info)
	}
	return out, nil
}

func (ss *scheduleService) Add(ctx context.Context, req *hopperv1.ScheduleServiceAddRequest) (*hopperv1.ScheduleServiceAddResponse, error) {
	spec := req.GetSchedule()
	if spec == nil {
		return nil, invalidArg("schedule", "is required")
	}
	in, err := apispec.FromScheduleSpec(spec)
	if err != nil {
		return nil, rpcError("add schedule", err)
	}
	info, err := ss.s.client.AddSchedule(ctx, in.Schedule) // the client validates it
	if err != nil {
		return nil, rpcError("add schedule", apispec.ScheduleError(err))
	}
	return &hopperv1.ScheduleServiceAddResponse{Schedule: apispec.Schedule(info)}, nil
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

// Run enqueues the schedule's job now, recorded in the job's history as an operator's run by
// the caller's key.
func (ss *scheduleService) Run(ctx context.Context, req *hopperv1.ScheduleServiceRunRequest) (*hopperv1.ScheduleServiceRunResponse, error) {
	job, err := ss.s.client.RunScheduleBy(ctx, req.GetName(), hopper.ActorOperator, "run now by "+replayedBy(ctx))
	if err != nil {
		return nil, rpcError("run schedule", err)
	}
	return &hopperv1.ScheduleServiceRunResponse{Job: ss.s.toJob(job)}, nil
}
