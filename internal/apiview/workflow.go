package apiview

import (
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
)

// Workflow is a workflow as the API shows it.
func Workflow(w *hoppertype.WorkflowRow) *hopperv1.Workflow {
	out := &hopperv1.Workflow{Id: Text(w.ID), Name: Text(w.Name), State: string(w.State), Steps: Int32(w.Steps),
		CreatedAt: Time(w.CreatedAt), StartedAt: Time(w.StartedAt), FinishedAt: Time(w.FinishedAt)}
	if len(w.StepStates) > 0 {
		out.StepStates = make(map[string]int32, len(w.StepStates))
		for st, n := range w.StepStates {
			out.StepStates[string(st)] = Int32(n)
		}
	}
	return out
}

// FromWorkflow reads a workflow the API showed. Nil reads as nil.
func FromWorkflow(w *hopperv1.Workflow) *hoppertype.WorkflowRow {
	if w == nil {
		return nil
	}
	out := &hoppertype.WorkflowRow{ID: w.GetId(), Name: w.GetName(), State: hoppertype.WorkflowState(w.GetState()),
		Steps: int(w.GetSteps()), StepStates: map[hoppertype.JobState]int{}, CreatedAt: FromTime(w.GetCreatedAt()),
		StartedAt: FromTime(w.GetStartedAt()), FinishedAt: FromTime(w.GetFinishedAt())}
	for st, n := range w.GetStepStates() {
		out.StepStates[hoppertype.JobState(st)] = int(n)
	}
	return out
}
