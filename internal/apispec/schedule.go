package apispec

import (
	"encoding/json"
	"strings"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Schedule is a stored schedule with its state as the API shows it.
func Schedule(info *hopper.ScheduleInfo) *hopperv1.Schedule {
	args, _ := info.Args.(json.RawMessage) // a ScheduleInfo's Args always is
	out := scheduleSpec(info.Schedule, apiview.Payload(args), apiview.Text)
	out.Source, out.LastJobId = info.Source, info.LastJobID
	out.LastFireAt, out.NextFireAt = apiview.Time(info.LastFireAt), apiview.Time(info.NextFireAt)
	out.CreatedAt, out.UpdatedAt = apiview.Time(info.CreatedAt), apiview.Time(info.UpdatedAt)
	out.LastManualFireAt, out.LastManualJobId = apiview.Time(info.LastManualFireAt), info.LastManualJobID
	out.LastWorkflowId = info.LastWorkflowID
	return out
}

// rawJobSpec is a workflow step's job as the API carries it, its args already JSON (a
// hopper.RawArgs, as a stored schedule's steps are) or encoded.
func rawJobSpec(a hopper.JobArgs, o *hopper.InsertOpts) (*hopperv1.JobSpec, error) {
	raw, ok := a.(hopper.RawArgs)
	if !ok {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, &hopper.ValidationError{Field: "args", Reason: "cannot encode as JSON: " + err.Error()}
		}
		opts := hopper.InsertOptsFor(a, o) // the args type's defaults, as an enqueue's
		return JobSpec(a.Kind(), b, &opts)
	}
	return JobSpec(raw.KindName, raw.JSON, o)
}

// ScheduleSpec is a schedule to add as the API carries it. Its Args are encoded as JSON (a
// json.RawMessage as it is; nil sends none, so that the server's default applies), and its
// Kind defaults to the Args' kind when they are a hopper.JobArgs, as AddSchedule does. Args
// that do not encode are a *hopper.ValidationError naming args.
func ScheduleSpec(s hopper.Schedule) (*hopperv1.Schedule, error) {
	var args []byte
	switch a := s.Args.(type) {
	case nil:
	case json.RawMessage:
		args = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, &hopper.ValidationError{Field: "args", Reason: "cannot encode as JSON: " + err.Error()}
		}
		args = b
	}
	if ja, ok := s.Args.(hopper.JobArgs); ok && s.Kind == "" {
		s.Kind = ja.Kind()
	}
	out := scheduleSpec(s, string(args), func(s string) string { return s })
	if s.Workflow != nil {
		wf, err := WorkflowRequest(*s.Workflow, rawJobSpec)
		if err != nil {
			return nil, prefixed("workflow.", err)
		}
		out.Workflow = wf
	}
	return out, nil
}

// scheduleSpec is s with args; text shows its stored strings (Text in an answer, as they
// are in a request, which the server checks).
func scheduleSpec(s hopper.Schedule, args string, text func(string) string) *hopperv1.Schedule {
	headers := s.Headers
	if len(headers) > 0 {
		headers = make(map[string]string, len(s.Headers))
		for k, v := range s.Headers {
			headers[text(k)] = text(v)
		}
	}
	var wf *hopperv1.EnqueueWorkflowRequest
	if s.Workflow != nil {
		wf, _ = WorkflowRequest(*s.Workflow, rawJobSpec) // a stored workflow's steps always convert
	}
	return &hopperv1.Schedule{
		Workflow: wf,
		Name:     text(s.Name), Cron: text(s.Cron), Every: apiview.Duration(s.Every), FixedDelay: apiview.Duration(s.FixedDelay),
		Tz: text(s.TZ), Kind: text(s.Kind), Args: args, Queue: text(s.Queue), Priority: apiview.Int32(s.Priority),
		MaxAttempts: apiview.Int32(s.MaxAttempts), Timeout: apiview.Duration(s.Timeout), Headers: headers,
		CatchUp: string(s.CatchUp), Overlap: string(s.Overlap), Jitter: apiview.Duration(s.Jitter), Paused: s.Paused,
	}
}

// FromSchedule reads a schedule: to add, its Schedule; as listed, with its state. Its Args
// are a json.RawMessage, or nil when the message has none. A workflow that does not read
// (FromScheduleSpec says why) is left out.
func FromSchedule(s *hopperv1.Schedule) *hopper.ScheduleInfo {
	out, _ := FromScheduleSpec(s)
	return out
}

// FromScheduleSpec is FromSchedule with the error of a workflow whose steps do not read, a
// *hopper.ValidationError naming the field as the API does (workflow.steps[1].job.timeout).
func FromScheduleSpec(s *hopperv1.Schedule) (*hopper.ScheduleInfo, error) {
	out := fromSchedule(s)
	if s.GetWorkflow() == nil {
		return out, nil
	}
	wf, err := FromWorkflowRequest(s.GetWorkflow())
	if err != nil {
		return out, ScheduleError(err)
	}
	out.Workflow = &wf
	return out, nil
}

// ScheduleError is err with the field a *hopper.ValidationError names in the API's words: a
// workflow step's job option workflow.steps[i].<option> is workflow.steps[i].job.<option>.
func ScheduleError(err error) error {
	return renamed(err, func(f string) string {
		if rest, ok := strings.CutPrefix(f, "workflow."); ok {
			return "workflow." + WorkflowField(rest)
		}
		return f
	})
}

// FromScheduleField is the Go API's name of a schedule's field the API names field (the
// reverse of ScheduleError's).
func FromScheduleField(field string) string {
	if rest, ok := strings.CutPrefix(field, "workflow."); ok {
		return "workflow." + FromWorkflowField(rest)
	}
	return field
}

func fromSchedule(s *hopperv1.Schedule) *hopper.ScheduleInfo {
	out := &hopper.ScheduleInfo{
		Schedule: hopper.Schedule{
			Name: s.GetName(), Cron: s.GetCron(), Every: apiview.FromDuration(s.GetEvery()),
			FixedDelay: apiview.FromDuration(s.GetFixedDelay()), TZ: s.GetTz(), Kind: s.GetKind(),
			Queue: s.GetQueue(), Priority: int(s.GetPriority()), MaxAttempts: int(s.GetMaxAttempts()),
			Timeout: apiview.FromDuration(s.GetTimeout()), Headers: s.GetHeaders(),
			CatchUp: hopper.CatchUp(s.GetCatchUp()), Overlap: hopper.Overlap(s.GetOverlap()),
			Jitter: apiview.FromDuration(s.GetJitter()), Paused: s.GetPaused(),
		},
		Source: s.GetSource(), LastFireAt: apiview.FromTime(s.GetLastFireAt()), NextFireAt: apiview.FromTime(s.GetNextFireAt()),
		LastJobID: s.GetLastJobId(), CreatedAt: apiview.FromTime(s.GetCreatedAt()), UpdatedAt: apiview.FromTime(s.GetUpdatedAt()),
		LastManualFireAt: apiview.FromTime(s.GetLastManualFireAt()), LastManualJobID: s.GetLastManualJobId(),
		LastWorkflowID: s.GetLastWorkflowId(),
	}
	if s.GetArgs() != "" {
		out.Args = json.RawMessage(s.GetArgs()) // nil otherwise: an interface holding a nil RawMessage is not nil
	}
	return out
}
