// Package uitest runs the dashboard (hopperui) for tests: a client with workers on a SQLite
// store in t.TempDir(), and the dashboard mounted by a library user at /ui of an httptest
// server, all stopped at the test's cleanup. hopperui's own tests use it over plain HTTP, and
// the browser tests (e2e/dashboard, a module of their own) through chromium.
package uitest

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// Steps is a job whose worker reports the progress the test sends on its Env's Progress
// channel, and ends when the channel closes (or fails with Fail as its error, without retry).
type Steps struct {
	Note string `json:"note"`
	Fail string `json:"fail,omitempty"`
}

// Kind is "steps".
func (Steps) Kind() string { return "steps" }

// Env is a client with workers, its store, and the dashboard mounted at /ui by a library
// user (no Auth: everyone may do everything).
type Env struct {
	Client   *hopper.Client
	Store    *sqlitestore.Store
	URL      string        // the dashboard's base, http://127.0.0.1:port/ui
	Progress chan Progress // what running Steps jobs report next; close it to end them
}

// Progress is one report of a running Steps job.
type Progress struct {
	Percent int
	Message string
}

// Opts change what Start starts; nil means none of them.
type Opts struct {
	UI      func(*hopperui.Config)      // changes the dashboard's config
	Workers func(*hopper.Workers, *Env) // adds workers besides Steps'
	DBPath  func(path string)           // called before the client opens the store
	Client  func(*hopper.Config)        // changes the client's config
}

// Start starts a client on queues default, reports and mail, with node id ui-test-node, and
// the dashboard; the test's cleanup stops them.
func Start(t *testing.T, opts *Opts) *Env {
	t.Helper()
	if opts == nil {
		opts = &Opts{}
	}
	path := sqlitetest.Path(t)
	if opts.DBPath != nil {
		opts.DBPath(path)
	}
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: path})
	require.NoError(t, err)
	e := &Env{Store: st, Progress: make(chan Progress)}
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, e.work)
	if opts.Workers != nil {
		opts.Workers(ws, e)
	}
	cfg := hopper.Config{Store: st, Workers: ws, WorkerID: "ui-test-node",
		PollInterval: 50 * time.Millisecond, Queues: map[string]hopper.QueueConfig{"default": {}, "reports": {}, "mail": {}}}
	if opts.Client != nil {
		opts.Client(&cfg)
	}
	c, err := hopper.NewClient(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	e.Client = c
	uiCfg := hopperui.Config{Client: c, Prefix: "/ui"}
	if opts.UI != nil {
		opts.UI(&uiCfg)
	}
	ui, err := hopperui.New(uiCfg)
	require.NoError(t, err)
	ts := httptest.NewServer(ui)
	e.URL = ts.URL + "/ui"
	t.Cleanup(func() {
		ts.Close()
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return e
}

func (e *Env) work(ctx context.Context, job *hopper.Job[Steps]) error {
	if job.Args.Fail != "" {
		return hopper.NoRetry(errors.New(job.Args.Fail))
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s, ok := <-e.Progress:
			if !ok {
				return nil
			}
			if err := hopper.ReportProgress(ctx, s.Percent, s.Message); err != nil {
				return err
			}
		}
	}
}

// Enqueue adds a job and returns it.
func (e *Env) Enqueue(t *testing.T, args hopper.JobArgs, opts *hopper.InsertOpts) *hopper.JobRow {
	t.Helper()
	res, err := e.Client.Enqueue(t.Context(), args, opts)
	require.NoError(t, err)
	return res.Job
}

// WaitState waits until the job is in state, for at most 15 s.
func (e *Env) WaitState(t *testing.T, id string, state hopper.JobState) *hopper.JobRow {
	t.Helper()
	var job *hopper.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = e.Client.Get(t.Context(), id)
		require.NoError(t, err)
		return job.State == state
	}, 15*time.Second, 10*time.Millisecond, "job %s to become %s", id, state)
	return job
}

// Failed enqueues a job that fails at once with msg (a dead letter) and waits for it.
func (e *Env) Failed(t *testing.T, msg string) *hopper.JobRow {
	t.Helper()
	job := e.Enqueue(t, Steps{Fail: msg}, nil)
	return e.WaitState(t, job.ID, hopper.StateFailed)
}
