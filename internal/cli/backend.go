package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	remoteworker "github.com/hopperjobs/hopper/remote"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const (
	flagServer = "server"
	// envAPIKey holds the API key sent with --server.
	envAPIKey = "HOPPER_API_KEY"
)

// backend is where a command's jobs live: a database opened directly (--database) or a
// running server (--server). Both answer with the same types and the same errors, so each
// command is written once.
type backend interface {
	Enqueue(ctx context.Context, args hopper.RawArgs, opts *hopper.InsertOpts) (*hopper.InsertResult, error)
	Get(ctx context.Context, id string) (*hopper.JobRow, error)
	List(ctx context.Context, p *hopper.ListParams) (*hopper.ListResult, error)
	Cancel(ctx context.Context, id, reason string) (*hopper.JobRow, error)
	Resume(ctx context.Context, id string, data json.RawMessage, reason string) (*hopper.JobRow, error)
	Events(ctx context.Context, id string) ([]*hopper.Event, error)
	Attempts(ctx context.Context, id string) ([]*hopper.AttemptRecord, error)
	Queues(ctx context.Context) ([]*hopper.QueueInfo, error)
	PauseQueue(ctx context.Context, queue string) error
	ResumeQueue(ctx context.Context, queue string) error
	// SetQueue sets the queue's settings that are not nil (settings.go; checked by the caller).
	SetQueue(ctx context.Context, queue string, s settings) error
	// Job kinds (kinds.go; remote side in kinds_remote.go).
	Kinds(ctx context.Context) ([]*hopper.KindInfo, error)
	// SetKind sets the kind's settings that are not nil (its cap and rate limit).
	SetKind(ctx context.Context, kind string, s settings) error
	DisableKind(ctx context.Context, kind string) error
	EnableKind(ctx context.Context, kind string) error
	Nodes(ctx context.Context) ([]*hopper.Node, error)
	// The dead-letter queue (dlq.go).
	DeadLetters(ctx context.Context, p *hopper.DeadLetterParams) (*hopper.ListResult, error)
	DeadLetterStats(ctx context.Context) (*hopper.DeadLetterStats, error)
	Replay(ctx context.Context, id string) (*hopper.JobRow, error)
	ReplayMany(ctx context.Context, f hopper.DeadLetterFilter, limit int) ([]*hopper.JobRow, error)
	Replays(ctx context.Context, p *hopper.ReplayListParams) (*hopper.ReplayListResult, error)
	// Recurring schedules (schedules.go; remote side in schedules_remote.go).
	Schedules(ctx context.Context) ([]*hopper.ScheduleInfo, error)
	AddSchedule(ctx context.Context, s hopper.Schedule) (*hopper.ScheduleInfo, error)
	RemoveSchedule(ctx context.Context, name string) error
	PauseSchedule(ctx context.Context, name string) error
	ResumeSchedule(ctx context.Context, name string) error
}

// withBackend runs fn against --server when it is set, else against --database (with
// mustExist as in withStore).
func withBackend(cmd *cobra.Command, mustExist bool, fn func(backend) error) error {
	if url := serverURL(cmd); url != "" {
		return fn(newRemote(url, os.Getenv(envAPIKey)))
	}
	return withClient(cmd, mustExist, func(c *hopper.Client) error { return fn(local{c}) })
}

// serverURL is --server (or $HOPPER_SERVER, env.go), "" when neither is set.
func serverURL(cmd *cobra.Command) string {
	url, _ := cmd.Flags().GetString(flagServer)
	return strings.TrimRight(url, "/")
}

// local is a database opened by the CLI.
type local struct{ *hopper.Client }

func (l local) SetQueue(ctx context.Context, queue string, s settings) error {
	if s.Weight != nil {
		if err := l.SetQueueWeight(ctx, queue, *s.Weight); err != nil {
			return err
		}
	}
	return l.setLimits(ctx, queue, "", s)
}

// setLimits sets the cap and the rate limit of a queue or a kind, those that are not nil.
func (l local) setLimits(ctx context.Context, queue, kind string, s settings) error {
	if s.Cap != nil {
		if err := l.SetLimit(ctx, hopper.Limit{Queue: queue, Kind: kind, MaxRunning: *s.Cap}); err != nil {
			return err
		}
	}
	if s.Rate != nil {
		return l.SetRateLimit(ctx, hopper.RateLimit{Queue: queue, Kind: kind, Rate: *s.Rate})
	}
	return nil
}

func (l local) Enqueue(ctx context.Context, args hopper.RawArgs, opts *hopper.InsertOpts) (*hopper.InsertResult, error) {
	return l.Client.Enqueue(ctx, args, opts)
}

func (l local) Resume(ctx context.Context, id string, data json.RawMessage, reason string) (*hopper.JobRow, error) {
	var d any
	if len(data) > 0 {
		d = data
	}
	return l.ResumeBy(ctx, id, d, hopper.ActorOperator, reason)
}

func (l local) Cancel(ctx context.Context, id, reason string) (*hopper.JobRow, error) {
	return l.CancelBy(ctx, id, hopper.ActorOperator, reason)
}

// remote is a server reached over its RPC API.
type remote struct {
	jobs   hopperv1connect.JobServiceClient
	queues hopperv1connect.QueueServiceClient
	kinds  hopperv1connect.KindServiceClient
	admin  hopperv1connect.AdminServiceClient
	dlq    hopperv1connect.DeadLetterServiceClient
	sched  hopperv1connect.ScheduleServiceClient
}

func newRemote(url, key string) *remote {
	var interceptors []connect.ClientInterceptor
	if key != "" {
		interceptors = append(interceptors, remoteworker.Bearer(key))
	}
	c := connect.NewClient(connecthttp.NewTransport(&http.Client{Timeout: time.Minute}, url), interceptors...)
	return &remote{jobs: hopperv1connect.NewJobServiceClient(c), queues: hopperv1connect.NewQueueServiceClient(c),
		kinds: hopperv1connect.NewKindServiceClient(c), admin: hopperv1connect.NewAdminServiceClient(c),
		dlq: hopperv1connect.NewDeadLetterServiceClient(c), sched: hopperv1connect.NewScheduleServiceClient(c)}
}

func (r *remote) Enqueue(ctx context.Context, args hopper.RawArgs, o *hopper.InsertOpts) (*hopper.InsertResult, error) {
	spec := &hopperv1.JobSpec{Kind: args.KindName, Args: string(args.JSON)}
	if o != nil {
		spec.Queue, spec.Priority, spec.MaxAttempts = o.Queue, int32(o.Priority), int32(o.MaxAttempts)
		spec.Headers, spec.IdempotencyKey, spec.GroupKey = o.Headers, o.IdempotencyKey, o.GroupKey
		spec.MaxRescues = int32(o.MaxRescues)
		spec.MergeKey, spec.Merge = o.MergeKey, string(o.Merge)
		if o.Delay != 0 {
			spec.Delay = durationpb.New(o.Delay)
		}
		if !o.RunAt.IsZero() {
			spec.RunAt = timestamppb.New(o.RunAt)
		}
		if o.Timeout != 0 {
			spec.Timeout = durationpb.New(o.Timeout)
		}
	}
	res, err := r.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: spec})
	if err != nil {
		return nil, remoteErr(err)
	}
	return &hopper.InsertResult{Job: fromJob(res.GetJob()), Existing: res.GetExisting(), Merged: res.GetMerged()}, nil
}

func (r *remote) Get(ctx context.Context, id string) (*hopper.JobRow, error) {
	res, err := r.jobs.Get(ctx, &hopperv1.GetRequest{Id: id})
	if err != nil {
		return nil, remoteErr(err)
	}
	return fromJob(res.GetJob()), nil
}

func (r *remote) List(ctx context.Context, p *hopper.ListParams) (*hopper.ListResult, error) {
	req := &hopperv1.ListRequest{Queues: p.Queues, Kinds: p.Kinds, Cursor: p.Cursor, Limit: int32(p.Limit), Ascending: p.Ascending}
	for _, s := range p.States {
		req.States = append(req.States, string(s))
	}
	if !p.CreatedAfter.IsZero() {
		req.CreatedAfter = timestamppb.New(p.CreatedAfter)
	}
	if !p.CreatedBefore.IsZero() {
		req.CreatedBefore = timestamppb.New(p.CreatedBefore)
	}
	res, err := r.jobs.List(ctx, req)
	if err != nil {
		return nil, remoteErr(err)
	}
	out := &hopper.ListResult{NextCursor: res.GetNextCursor()}
	for _, j := range res.GetJobs() {
		out.Jobs = append(out.Jobs, fromJob(j))
	}
	return out, nil
}

func (r *remote) Resume(ctx context.Context, id string, data json.RawMessage, reason string) (*hopper.JobRow, error) {
	res, err := r.jobs.Resume(ctx, &hopperv1.JobServiceResumeRequest{Id: id, Data: string(data), Reason: reason})
	if err != nil {
		return nil, remoteErr(err)
	}
	return fromJob(res.GetJob()), nil
}

func (r *remote) Cancel(ctx context.Context, id, reason string) (*hopper.JobRow, error) {
	res, err := r.jobs.Cancel(ctx, &hopperv1.CancelRequest{Id: id, Reason: reason})
	if err != nil {
		return nil, remoteErr(err)
	}
	return fromJob(res.GetJob()), nil
}

func (r *remote) history(ctx context.Context, id string) (*hopperv1.EventsResponse, error) {
	res, err := r.jobs.Events(ctx, &hopperv1.EventsRequest{Id: id})
	if err != nil {
		return nil, remoteErr(err)
	}
	return res, nil
}

func (r *remote) Events(ctx context.Context, id string) ([]*hopper.Event, error) {
	res, err := r.history(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]*hopper.Event, len(res.GetEvents()))
	for i, e := range res.GetEvents() {
		out[i] = &hopper.Event{JobID: id, Seq: e.GetSeq(), At: e.GetAt().AsTime(), From: hopper.JobState(e.GetFrom()),
			To: hopper.JobState(e.GetTo()), Actor: hopper.Actor(e.GetActor()), Reason: e.GetReason()}
	}
	return out, nil
}

func (r *remote) Attempts(ctx context.Context, id string) ([]*hopper.AttemptRecord, error) {
	res, err := r.history(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]*hopper.AttemptRecord, len(res.GetAttempts()))
	for i, a := range res.GetAttempts() {
		out[i] = &hopper.AttemptRecord{JobID: id, Token: a.GetLeaseToken(), Attempt: int(a.GetAttempt()),
			WorkerID: a.GetWorkerId(), StartedAt: timeOf(a.GetStartedAt()), EndedAt: timeOf(a.GetEndedAt()),
			Outcome: hopper.Outcome(a.GetOutcome()), Error: a.GetError(), Stack: a.GetStack()}
	}
	return out, nil
}

func (r *remote) Queues(ctx context.Context) ([]*hopper.QueueInfo, error) {
	res, err := r.queues.List(ctx, &hopperv1.QueueServiceListRequest{})
	if err != nil {
		return nil, remoteErr(err)
	}
	out := make([]*hopper.QueueInfo, len(res.GetQueues()))
	for i, q := range res.GetQueues() {
		out[i] = &hopper.QueueInfo{Name: q.GetName(), Paused: q.GetPaused(), Weight: int(q.GetWeight()),
			MaxRunning: int(q.GetMaxRunning()), Counts: fromCounts(q.GetCounts()), AwaitingCompute: q.GetAwaitingCompute(),
			Disabled: q.GetDisabled(), Rate: rateOf(q.GetRate())}
	}
	return out, nil
}

// fromCounts is the API's job counts per state.
func fromCounts(counts map[string]int64) map[hopper.JobState]int64 {
	out := make(map[hopper.JobState]int64, len(counts))
	for st, n := range counts {
		out[hopper.JobState(st)] = n
	}
	return out
}

func (r *remote) PauseQueue(ctx context.Context, queue string) error {
	_, err := r.queues.Pause(ctx, &hopperv1.PauseRequest{Queue: queue})
	return remoteErr(err)
}

func (r *remote) SetQueue(ctx context.Context, queue string, s settings) error {
	req := &hopperv1.QueueServiceSetRequest{Queue: queue, Weight: int32Ptr(s.Weight), MaxRunning: int32Ptr(s.Cap),
		Rate: rateField(s.Rate)}
	_, err := r.queues.Set(ctx, req)
	return remoteErr(err)
}

// int32Ptr is an optional number of a request.
func int32Ptr(n *int) *int32 {
	if n == nil {
		return nil
	}
	return proto.Int32(int32(*n))
}

// rateField is an optional rate limit of a request, as the API writes it.
func rateField(r *hopper.Rate) *string {
	if r == nil {
		return nil
	}
	return proto.String(r.String())
}

func (r *remote) ResumeQueue(ctx context.Context, queue string) error {
	_, err := r.queues.Resume(ctx, &hopperv1.ResumeRequest{Queue: queue})
	return remoteErr(err)
}

func (r *remote) Nodes(ctx context.Context) ([]*hopper.Node, error) {
	res, err := r.admin.ListNodes(ctx, &hopperv1.ListNodesRequest{})
	if err != nil {
		return nil, remoteErr(err)
	}
	out := make([]*hopper.Node, len(res.GetNodes()))
	for i, n := range res.GetNodes() {
		out[i] = &hopper.Node{ID: n.GetId(), Host: n.GetHost(), PID: int(n.GetPid()),
			StartedAt: timeOf(n.GetStartedAt()), HeartbeatAt: timeOf(n.GetHeartbeatAt()), Holding: n.GetHolding(),
			Idle: n.GetIdle()}
	}
	return out, nil
}

func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func fromJob(j *hopperv1.Job) *hopper.JobRow {
	return &hopper.JobRow{
		ID: j.GetId(), Kind: j.GetKind(), Queue: j.GetQueue(), Priority: int(j.GetPriority()),
		Args: json.RawMessage(j.GetArgs()), Headers: j.GetHeaders(), State: hopper.JobState(j.GetState()),
		Attempt: int(j.GetAttempt()), MaxAttempts: int(j.GetMaxAttempts()), Token: j.GetLeaseToken(),
		RunAt: timeOf(j.GetRunAt()), Timeout: j.GetTimeout().AsDuration(), WorkerID: j.GetWorkerId(),
		LeaseExpiresAt: timeOf(j.GetLeaseExpiresAt()), HeartbeatAt: timeOf(j.GetHeartbeatAt()),
		ProgressPercent: int(j.GetProgressPercent()), ProgressMessage: j.GetProgressMessage(),
		Result: rawOrNil(j.GetResult()), LastError: j.GetLastError(), IdempotencyKey: j.GetIdempotencyKey(),
		GroupKey: j.GetGroupKey(), MergeKey: j.GetMergeKey(), OriginalID: j.GetOriginalId(), ReplayCount: int(j.GetReplayCount()),
		ReplayedBy: j.GetReplayedBy(), CreatedAt: timeOf(j.GetCreatedAt()), StartedAt: timeOf(j.GetStartedAt()), FinishedAt: timeOf(j.GetFinishedAt()),
		UpdatedAt: timeOf(j.GetUpdatedAt()), ExpiresAt: timeOf(j.GetExpiresAt()),
		Checkpoint: rawOrNil(j.GetCheckpoint()), ResumeData: rawOrNil(j.GetResumeData()),
		DeadlineAt: timeOf(j.GetDeadlineAt()),
		Rescues:    int(j.GetRescues()), MaxRescues: int(j.GetMaxRescues()),
	}
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// errUnauthorized: the server refused the credentials (exit code ExitAuth).
var errUnauthorized = errors.New("not authorized")

// remoteErr turns a server's error into the error the database path would have returned,
// so exit codes are the same whichever way the command went.
func remoteErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument:
		return &exitError{code: ExitUsage, msg: msg, err: err}
	case connect.CodeNotFound:
		return fmt.Errorf("%s: %w", msg, hopper.ErrNotFound)
	case connect.CodeFailedPrecondition:
		return fmt.Errorf("%s: %w", msg, hopper.ErrInvalidTransition)
	case connect.CodeAlreadyExists:
		return fmt.Errorf("%s: %w", msg, hopper.ErrDuplicate)
	case connect.CodeUnauthenticated, connect.CodePermissionDenied:
		return &exitError{code: ExitAuth, msg: fmt.Sprintf("%s (set %s to a key with the right scope)", msg, envAPIKey),
			err: errors.Join(errUnauthorized, err)}
	case connect.CodeUnavailable, connect.CodeUnknown:
		return &exitError{code: ExitUnavailable, msg: "server unavailable: " + err.Error(), err: err}
	}
	return err
}

// rateOf is a rate limit the API wrote: empty for none. The server wrote it, so a value that
// does not parse (a newer server's) shows as none.
func rateOf(text string) hopper.Rate {
	if text == "" {
		return hopper.Rate{}
	}
	r, _ := hopper.ParseRate("rate", text)
	return r
}
