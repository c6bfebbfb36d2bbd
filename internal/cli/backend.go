package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/spf13/cobra"
)

const (
	flagServer = "server"
	// envAPIKey holds the API key sent with --server.
	envAPIKey = "HOPPER_API_KEY"
)

// backend is where a command's jobs live: a database opened directly (--database, local) or
// a running server (--server, a *hopperclient.Client). Both answer with the same types and
// the same errors, so each command is written once.
type backend interface {
	Enqueue(ctx context.Context, args hopper.JobArgs, opts *hopper.InsertOpts) (*hopper.InsertResult, error)
	Get(ctx context.Context, id string) (*hopper.JobRow, error)
	List(ctx context.Context, p *hopper.ListParams) (*hopper.ListResult, error)
	Cancel(ctx context.Context, id, reason string) (*hopper.JobRow, error)
	Resume(ctx context.Context, id string, data any, reason string) (*hopper.JobRow, error)
	Events(ctx context.Context, id string) ([]*hopper.Event, error)
	Attempts(ctx context.Context, id string) ([]*hopper.AttemptRecord, error)
	Queues(ctx context.Context) ([]*hopper.QueueInfo, error)
	PauseQueue(ctx context.Context, queue string) error
	ResumeQueue(ctx context.Context, queue string) error
	// SetQueue sets the queue's settings that are not nil (settings.go; checked by the caller).
	SetQueue(ctx context.Context, queue string, s hopperclient.QueueSettings) error
	// Job kinds (kinds.go).
	Kinds(ctx context.Context) ([]*hopper.KindInfo, error)
	// SetKind sets the kind's settings that are not nil (its cap and rate limit).
	SetKind(ctx context.Context, kind string, s hopperclient.KindSettings) error
	DisableKind(ctx context.Context, kind string) error
	EnableKind(ctx context.Context, kind string) error
	CompactKind(ctx context.Context, kind string, opts *hopper.CompactOpts) (*hopper.CompactResult, error)
	// Lineage returns the jobs job id replaced in a compaction and the job that replaced it.
	Lineage(ctx context.Context, id string) (from []string, into string, err error)
	Nodes(ctx context.Context) ([]*hopper.Node, error)
	// The dead-letter queue (dlq.go).
	DeadLetters(ctx context.Context, p *hopper.DeadLetterParams) (*hopper.DeadLetterPage, error)
	DeadLetterStats(ctx context.Context) (*hopper.DeadLetterStats, error)
	ReplayWith(ctx context.Context, id string, opts hopper.ReplayOpts) (*hopper.JobRow, error)
	ReplayMany(ctx context.Context, f hopper.DeadLetterFilter, limit int) (*hopper.ReplayManyResult, error)
	// Incidents resolved in place (jobs_retry.go).
	RetryJob(ctx context.Context, id string, opts hopper.RetryOpts) (*hopper.JobRow, error)
	RetryMany(ctx context.Context, f hopper.DeadLetterFilter, opts hopper.RetryManyOpts) (*hopper.RetryManyResult, error)
	UpdateRetries(ctx context.Context, id string, maxAttempts int) (*hopper.JobRow, error)
	Replays(ctx context.Context, p *hopper.ReplayListParams) (*hopper.ReplayListResult, error)
	// Recurring schedules (schedules.go).
	Schedules(ctx context.Context) ([]*hopper.ScheduleInfo, error)
	GetSchedule(ctx context.Context, name string) (*hopper.ScheduleInfo, error)
	RunSchedule(ctx context.Context, name string) (*hopper.JobRow, error)
	AddSchedule(ctx context.Context, s hopper.Schedule) (*hopper.ScheduleInfo, error)
	RemoveSchedule(ctx context.Context, name string) error
	PauseSchedule(ctx context.Context, name string) error
	ResumeSchedule(ctx context.Context, name string) error
	// Workflows (workflows.go).
	EnqueueWorkflow(ctx context.Context, wf hopper.Workflow) (*hopper.WorkflowResult, error)
	Workflow(ctx context.Context, id string) (*hopper.WorkflowDetail, error)
	ListWorkflows(ctx context.Context, p *hopper.WorkflowListParams) (*hopper.WorkflowListResult, error)
	CancelWorkflow(ctx context.Context, id, reason string) (*hopper.WorkflowCancelResult, error)
}

var (
	_ backend = local{}
	_ backend = (*hopperclient.Client)(nil)
)

// withBackend runs fn against --server when it is set, else against --database (with
// mustExist as in withStore).
func withBackend(cmd *cobra.Command, mustExist bool, fn func(backend) error) error {
	if url := serverURL(cmd); url != "" {
		c, err := newRemote(url)
		if err != nil {
			return err
		}
		return remoteErr(fn(c))
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

func (l local) SetQueue(ctx context.Context, queue string, s hopperclient.QueueSettings) error {
	if s.Weight != nil {
		if err := l.SetQueueWeight(ctx, queue, *s.Weight); err != nil {
			return err
		}
	}
	if err := l.setLimits(ctx, queue, "", s.MaxRunning, s.Rate, false); err != nil {
		return err
	}
	if err := l.setLimits(ctx, queue, "", s.CapPerKey, s.RatePerKey, true); err != nil {
		return err
	}
	keys := make([]string, 0, len(s.KeyWeights))
	for k := range s.KeyWeights {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := l.SetKeyWeight(ctx, queue, k, s.KeyWeights[k]); err != nil {
			return err
		}
	}
	return nil
}

func (l local) SetKind(ctx context.Context, kind string, s hopperclient.KindSettings) error {
	if err := l.setLimits(ctx, "", kind, s.MaxRunning, s.Rate, false); err != nil {
		return err
	}
	if err := l.setLimits(ctx, "", kind, s.CapPerKey, s.RatePerKey, true); err != nil {
		return err
	}
	if s.Compaction != nil {
		return l.SetKindCompaction(ctx, kind, *s.Compaction)
	}
	return nil
}

// setLimits sets the cap and the rate limit of a queue or a kind, or those per key, those that
// are not nil.
func (l local) setLimits(ctx context.Context, queue, kind string, maxRunning *int, rate *hopper.Rate, perKey bool) error {
	if maxRunning != nil {
		if err := l.SetLimit(ctx, hopper.Limit{Queue: queue, Kind: kind, MaxRunning: *maxRunning, PerKey: perKey}); err != nil {
			return err
		}
	}
	if rate != nil {
		return l.SetRateLimit(ctx, hopper.RateLimit{Queue: queue, Kind: kind, Rate: *rate, PerKey: perKey})
	}
	return nil
}

func (l local) Resume(ctx context.Context, id string, data any, reason string) (*hopper.JobRow, error) {
	return l.ResumeBy(ctx, id, data, hopper.ActorOperator, reason)
}

func (l local) CompactKind(ctx context.Context, kind string, opts *hopper.CompactOpts) (*hopper.CompactResult, error) {
	return l.CompactKindBy(ctx, kind, opts, hopper.ActorOperator)
}

func (l local) Lineage(ctx context.Context, id string) ([]string, string, error) {
	from, err := l.CompactedFrom(ctx, id)
	if err != nil {
		return nil, "", err
	}
	into, err := l.CompactedInto(ctx, id)
	return from, into, err
}

func (l local) Cancel(ctx context.Context, id, reason string) (*hopper.JobRow, error) {
	return l.CancelBy(ctx, id, hopper.ActorOperator, reason)
}

func (l local) CancelWorkflow(ctx context.Context, id, reason string) (*hopper.WorkflowCancelResult, error) {
	return l.CancelWorkflowBy(ctx, id, hopper.ActorOperator, reason)
}

// checkServerURL checks a --server URL (given as name) as the server's client does, so that a
// URL without a scheme (127.0.0.1:7070) is a usage error for every command, before anything
// runs. "" (no server) is fine.
func checkServerURL(name, url string) error {
	if url == "" {
		return nil
	}
	_, err := hopperclient.New(hopperclient.Config{URL: url})
	if ve, ok := errors.AsType[*hopper.ValidationError](err); ok && ve.Field == "Config.URL" {
		return usageErrorf("invalid %s: %s", name, ve.Reason)
	}
	return err
}

func (l local) RunSchedule(ctx context.Context, name string) (*hopper.JobRow, error) {
	return l.RunScheduleBy(ctx, name, hopper.ActorOperator, "run now with the CLI")
}

// newRemote is the client of the server at url (--server), with the key in $HOPPER_API_KEY.
// A URL it cannot use is a usage error.
func newRemote(url string) (*hopperclient.Client, error) {
	c, err := hopperclient.New(hopperclient.Config{URL: url, APIKey: os.Getenv(envAPIKey),
		HTTPClient: &http.Client{Timeout: time.Minute}})
	if ve, ok := errors.AsType[*hopper.ValidationError](err); ok {
		name := "--server"
		if ve.Field == "Config.APIKey" {
			name = envAPIKey
		}
		return nil, usageErrorf("invalid %s: %s", name, ve.Reason)
	}
	return c, err
}

// errUnauthorized: the server refused the credentials (exit code ExitAuth).
var errUnauthorized = errors.New("not authorized")

// remoteErr turns what a command through a server returned into the exit code and message the
// database path would have given, and says what to do about refused credentials and a server
// that cannot be reached. The errors of package hopper already have their exit codes
// (exitCode); a refusal that names no field shows the server's message alone.
func remoteErr(err error) error {
	ce, ok := errors.AsType[*connect.Error](err)
	if _, done := errors.AsType[*exitError](err); !ok || done {
		return err
	}
	switch {
	case errors.Is(err, hopperclient.ErrUnauthenticated), errors.Is(err, hopperclient.ErrPermissionDenied):
		return &exitError{code: ExitAuth, msg: fmt.Sprintf("%s (set %s to a key with the right scope)", ce.Message(), envAPIKey),
			err: errors.Join(errUnauthorized, err)}
	case ce.Code() == connect.CodeUnavailable, ce.Code() == connect.CodeUnknown:
		return &exitError{code: ExitUnavailable, msg: "server unavailable: " + ce.Error(), err: err}
	case ce.Code() == connect.CodeInvalidArgument && !errors.As(err, new(*hopper.ValidationError)):
		return &exitError{code: ExitUsage, msg: ce.Message(), err: err}
	}
	return err
}
