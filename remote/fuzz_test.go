package remote

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fuzzArgs tells fuzzWorker what to do.
type fuzzArgs struct {
	Do    uint8  `json:"do"`
	Text  string `json:"text"`
	Nanos int64  `json:"nanos"`
}

func (fuzzArgs) Kind() string { return "fuzz" }

// fuzzWorker ends its attempt in each way a handler can, with the job's text and number, and
// has a retry policy of its own (merged with the job's, which comes from the wire).
type fuzzWorker struct {
	hopper.WorkerDefaults[fuzzArgs]
}

func (fuzzWorker) Work(ctx context.Context, job *hopper.Job[fuzzArgs]) error {
	a := job.Args
	d := time.Duration(a.Nanos)
	switch a.Do % 10 {
	case 0:
		return hopper.SetResult(ctx, a.Text)
	case 1:
		return errors.New(a.Text)
	case 2:
		return hopper.RetryAfter(d, errors.New(a.Text))
	case 3:
		return hopper.Snooze(d)
	case 4:
		return hopper.Suspend(a.Text, hopper.SuspendOpts{Until: time.Unix(0, a.Nanos)})
	case 5:
		return hopper.Suspend(nil, hopper.SuspendOpts{Deadline: time.Now().Add(d)})
	case 6:
		panic(a.Text)
	case 7:
		return hopper.NoRetry(errors.New(a.Text))
	case 8:
		_ = hopper.ReportProgress(ctx, int(a.Nanos), a.Text) // the server knows no such job: lease lost
		_ = hopper.ExtendLease(ctx, d)
		return nil
	default:
		<-ctx.Done() // until the job's timeout, or the run's
		return context.Cause(ctx)
	}
}

func (fuzzWorker) RetryPolicy(*hopper.Job[fuzzArgs]) *hopper.RetryPolicy {
	return &hopper.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: time.Hour, Jitter: 0.1}
}

// fuzzJobID is the id of every fuzzed job: no such job exists on the server, so a report the
// server accepts is answered not_found (or failed_precondition), and one it refuses
// invalid_argument.
const fuzzJobID = "01900000-0000-7000-8000-000000000000"

// FuzzExecute hands the Go remote worker a job as a broken or hostile server might push it:
// any ActivatedJob, decoded from the input's protobuf bytes (attempt, max attempts, lease
// token, timeout, times, retry policy with any floats, checkpoint, headers, args), run by a
// handler that ends its attempt in each possible way (the args say which, unless the wire
// set its own). The worker never panics or hangs, sends exactly one outcome, and never sends
// a call the server refuses as invalid (that would leave the job running until its lease
// expires, then run it again, forever). The calls go to a real server on SQLite, which
// knows no such job.
func FuzzExecute(f *testing.F) {
	seed := func(job *hopperv1.ActivatedJob, do uint8, text string, nanos int64) {
		wire, err := proto.Marshal(job)
		require.NoError(f, err)
		f.Add(wire, do, text, nanos)
	}
	plain := &hopperv1.ActivatedJob{Attempt: 1, MaxAttempts: 3, LeaseToken: 1}
	for do := range uint8(10) {
		seed(plain, do, "boom", int64(time.Minute))
	}
	for _, job := range []*hopperv1.ActivatedJob{
		{Attempt: 60, MaxAttempts: 100, RetryPolicy: &hopperv1.RetryPolicy{Cap: durationpb.New(1 << 62)}},
		{Attempt: 2, RetryPolicy: &hopperv1.RetryPolicy{Jitter: 1e300, Multiplier: 1e300}},
		{Attempt: -5, RetryPolicy: &hopperv1.RetryPolicy{Base: &durationpb.Duration{Seconds: -1}, Multiplier: -2, Jitter: -1}},
		{Timeout: &durationpb.Duration{Seconds: 315576000000}, LeaseExpiresAt: &timestamppb.Timestamp{Seconds: -1 << 40}},
		{Timeout: &durationpb.Duration{Nanos: 1}, CreatedAt: &timestamppb.Timestamp{Nanos: -1}},
		{Kind: "nobody-works-this", Args: "{"},
		{Args: `{"do":1,"text":"\ud800"}`, Checkpoint: "{", ResumeData: "\x00", Headers: map[string]string{"ÿ": "\x00"}},
	} {
		seed(job, 1, "boom", 0)
	}
	seed(plain, 1, "caf\xe9\x00", 0)
	seed(plain, 2, "later", 100*365*24*int64(time.Hour))
	seed(plain, 2, "sooner", -1)
	seed(plain, 3, "", 100*365*24*int64(time.Hour))
	seed(plain, 4, "", 0)                       // until 1970
	seed(plain, 4, "", int64(time.Hour)*24*365) // until 1971
	seed(plain, 5, "", -int64(time.Hour))       // a deadline past
	seed(plain, 8, "\xff", -1)
	seed(plain, 1, strings.Repeat("ü", hopper.MaxErrorBytes), 0)            // an error past the limit
	seed(plain, 8, strings.Repeat("é", hopper.MaxProgressMessageBytes), -1) // a message past the limit

	w, calls := fuzzWorkerOn(f, serveForFuzz(f))
	f.Fuzz(func(t *testing.T, wire []byte, do uint8, text string, nanos int64) {
		job := &hopperv1.ActivatedJob{}
		if proto.Unmarshal(wire, job) != nil {
			return
		}
		job.Id = fuzzJobID
		if job.Kind == "" {
			job.Kind = fuzzArgs{}.Kind()
		}
		if job.Args == "" {
			b, err := json.Marshal(fuzzArgs{Do: do, Text: text, Nanos: nanos})
			require.NoError(t, err)
			job.Args = string(b)
		}
		calls.reset()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.execute(ctx, job, func() {})
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the worker did not finish the job within 30s")
		}
		calls.requireOneGoodOutcome(t)
	})
}

// serveForFuzz is a real server over a SQLite store for the whole fuzz run.
func serveForFuzz(f *testing.F) string {
	ts, _ := ServeForTest(f, ServeOptions{})
	return ts.URL
}

// fuzzWorkerOn is a worker with fuzzWorker whose calls to the server at url are recorded.
func fuzzWorkerOn(f *testing.F, url string) (*Worker, *recordedCalls) {
	ws := hopper.NewWorkers()
	hopper.AddWorker[fuzzArgs](ws, fuzzWorker{})
	w, err := New(Config{URL: url, Workers: ws, Name: "fuzz-worker", Mode: Poll})
	require.NoError(f, err)
	// The worker runs jobs here without being started: it learns its server's limits as Start would.
	res, err := w.limits.info.Info(context.Background(), &hopperv1.ServerServiceInfoRequest{})
	require.NoError(f, err)
	l, missing := limitsOf(res.GetServer().GetInputLimits())
	require.Empty(f, missing)
	w.limits.served.Store(l)
	calls := &recordedCalls{WorkerServiceClient: w.api}
	w.api = calls
	w.out = &batcher{api: calls}
	return w, calls
}

// recordedCalls records the worker's calls about attempts and the server's answers.
type recordedCalls struct {
	hopperv1connect.WorkerServiceClient
	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	procedure string
	outcome   bool // ends the attempt
	req       proto.Message
	code      connect.Code // 0 for success
}

func (r *recordedCalls) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

func (r *recordedCalls) note(procedure string, outcome bool, req proto.Message, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, recordedCall{procedure: procedure, outcome: outcome, req: req, code: connect.CodeOf(err)})
}

// requireOneGoodOutcome requires the attempt to end with one outcome the server took: the
// worker bounds delays and times to what the server takes, and when the server still refuses
// an outcome (a suspension deadline already past) the worker fails the attempt instead.
func (r *recordedCalls) requireOneGoodOutcome(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var outcomes []recordedCall
	for _, c := range r.calls {
		if c.outcome {
			outcomes = append(outcomes, c)
			continue
		}
		// The handler's own calls: a value the server refuses is the handler's error to see
		// (a lease duration out of range; a progress message is cleaned and cut to fit), and
		// the job's timeout (or the run's) may cut them short.
		codes := []connect.Code{connect.CodeNotFound, connect.CodeFailedPrecondition, connect.CodeDeadlineExceeded,
			connect.CodeCanceled}
		if c.procedure == "ExtendLease" {
			codes = append(codes, connect.CodeInvalidArgument)
		}
		require.Contains(t, codes, c.code, "%s %v", c.procedure, c.req)
	}
	require.NotEmpty(t, outcomes, "no outcome sent")
	last := outcomes[len(outcomes)-1]
	require.Contains(t, []connect.Code{connect.CodeNotFound, connect.CodeFailedPrecondition}, last.code,
		"%s %v: the server knows no such job", last.procedure, last.req)
	switch len(outcomes) {
	case 1:
	case 2:
		first := outcomes[0]
		require.Equal(t, connect.CodeInvalidArgument, first.code, "a second outcome after %s %v", first.procedure, first.req)
		require.Equal(t, "Suspend", first.procedure, "only a suspension's deadline is left for the server to refuse: %v", first.req)
		require.Equal(t, "Fail", last.procedure, "a refused outcome is followed by a failure")
	default:
		t.Fatalf("outcomes sent: %v", outcomes)
	}
}

func (r *recordedCalls) Complete(ctx context.Context, req *hopperv1.CompleteRequest) (*hopperv1.CompleteResponse, error) {
	res, err := r.WorkerServiceClient.Complete(ctx, req)
	r.note("Complete", true, req, err)
	return res, err
}

func (r *recordedCalls) Fail(ctx context.Context, req *hopperv1.FailRequest) (*hopperv1.FailResponse, error) {
	res, err := r.WorkerServiceClient.Fail(ctx, req)
	r.note("Fail", true, req, err)
	return res, err
}

func (r *recordedCalls) Release(ctx context.Context, req *hopperv1.ReleaseRequest) (*hopperv1.ReleaseResponse, error) {
	res, err := r.WorkerServiceClient.Release(ctx, req)
	r.note("Release", true, req, err)
	return res, err
}

func (r *recordedCalls) Snooze(ctx context.Context, req *hopperv1.SnoozeRequest) (*hopperv1.SnoozeResponse, error) {
	res, err := r.WorkerServiceClient.Snooze(ctx, req)
	r.note("Snooze", true, req, err)
	return res, err
}

func (r *recordedCalls) Suspend(ctx context.Context, req *hopperv1.SuspendRequest) (*hopperv1.SuspendResponse, error) {
	res, err := r.WorkerServiceClient.Suspend(ctx, req)
	r.note("Suspend", true, req, err)
	return res, err
}

// Report records each outcome of a batch as the single call it stands for, with its verdict.
func (r *recordedCalls) Report(ctx context.Context, req *hopperv1.ReportRequest) (*hopperv1.ReportResponse, error) {
	res, err := r.WorkerServiceClient.Report(ctx, req)
	for i, o := range req.GetOutcomes() {
		itemErr := err
		if err == nil {
			itemErr = verdictErr(res.GetOutcomes()[i])
		}
		var procedure string
		var msg proto.Message
		switch x := o.GetOutcome().(type) {
		case *hopperv1.Outcome_Complete:
			procedure, msg = "Complete", x.Complete
		case *hopperv1.Outcome_Fail:
			procedure, msg = "Fail", x.Fail
		case *hopperv1.Outcome_Release:
			procedure, msg = "Release", x.Release
		case *hopperv1.Outcome_Snooze:
			procedure, msg = "Snooze", x.Snooze
		case *hopperv1.Outcome_Suspend:
			procedure, msg = "Suspend", x.Suspend
		}
		r.note(procedure, true, msg, itemErr)
	}
	return res, err
}

func (r *recordedCalls) ExtendLease(ctx context.Context, req *hopperv1.ExtendLeaseRequest) (*hopperv1.ExtendLeaseResponse, error) {
	res, err := r.WorkerServiceClient.ExtendLease(ctx, req)
	r.note("ExtendLease", false, req, err)
	return res, err
}

func (r *recordedCalls) Heartbeat(ctx context.Context, req *hopperv1.HeartbeatRequest) (*hopperv1.HeartbeatResponse, error) {
	res, err := r.WorkerServiceClient.Heartbeat(ctx, req)
	r.note("Heartbeat", false, req, err)
	return res, err
}

func (r *recordedCalls) ReportProgress(ctx context.Context, req *hopperv1.ReportProgressRequest) (*hopperv1.ReportProgressResponse, error) {
	res, err := r.WorkerServiceClient.ReportProgress(ctx, req)
	r.note("ReportProgress", false, req, err)
	return res, err
}
