package hopperui_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// steps is a job whose worker reports the progress the test sends on its env's channel, and
// ends when the channel closes (or fails with Fail as its error, without retry).
type steps struct {
	Note string `json:"note"`
	Fail string `json:"fail,omitempty"`
}

func (steps) Kind() string { return "steps" }

// env is a client with workers, its store, and the dashboard mounted at /ui by a library
// user (no Auth: everyone may do everything).
type env struct {
	client   *hopper.Client
	store    *sqlitestore.Store
	url      string // the dashboard's base, http://127.0.0.1:port/ui
	progress chan progressStep
}

type progressStep struct {
	percent int
	message string
}

type setupOpts struct {
	ui      func(*hopperui.Config)
	workers func(*hopper.Workers, *env)
	dbPath  func(path string) // called before the client opens the store
}

func setup(t *testing.T, opts *setupOpts) *env {
	t.Helper()
	if opts == nil {
		opts = &setupOpts{}
	}
	path := t.TempDir() + "/hopper.db"
	if opts.dbPath != nil {
		opts.dbPath(path)
	}
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: path})
	require.NoError(t, err)
	e := &env{store: st, progress: make(chan progressStep)}
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, e.work)
	if opts.workers != nil {
		opts.workers(ws, e)
	}
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, WorkerID: "ui-test-node",
		PollInterval: 50 * time.Millisecond, Queues: map[string]hopper.QueueConfig{"default": {}, "reports": {}, "mail": {}}})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	e.client = c
	cfg := hopperui.Config{Client: c, Prefix: "/ui"}
	if opts.ui != nil {
		opts.ui(&cfg)
	}
	ui, err := hopperui.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(ui)
	e.url = ts.URL + "/ui"
	t.Cleanup(func() {
		ts.Close()
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return e
}

func (e *env) work(ctx context.Context, job *hopper.Job[steps]) error {
	if job.Args.Fail != "" {
		return hopper.NoRetry(errors.New(job.Args.Fail))
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s, ok := <-e.progress:
			if !ok {
				return nil
			}
			if err := hopper.ReportProgress(ctx, s.percent, s.message); err != nil {
				return err
			}
		}
	}
}

// enqueue adds a job and returns it.
func (e *env) enqueue(t *testing.T, args hopper.JobArgs, opts *hopper.InsertOpts) *hopper.JobRow {
	t.Helper()
	res, err := e.client.Enqueue(t.Context(), args, opts)
	require.NoError(t, err)
	return res.Job
}

// waitState waits until the job is in state.
func (e *env) waitState(t *testing.T, id string, state hopper.JobState) *hopper.JobRow {
	t.Helper()
	var job *hopper.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = e.client.Get(t.Context(), id)
		require.NoError(t, err)
		return job.State == state
	}, 15*time.Second, 10*time.Millisecond, "job %s to become %s", id, state)
	return job
}

// failed enqueues a job that fails at once (a dead letter) and waits for it.
func (e *env) failed(t *testing.T, msg string) *hopper.JobRow {
	t.Helper()
	job := e.enqueue(t, steps{Fail: msg}, nil)
	return e.waitState(t, job.ID, hopper.StateFailed)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
