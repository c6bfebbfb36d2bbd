package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// part completes with N, or fails for good when N is negative; sumParts sums its parents.
type (
	part     struct{ N int }
	sumParts struct{}
)

func (part) Kind() string     { return "part" }
func (sumParts) Kind() string { return "sum-parts" }

// counted counts the calls of one procedure (a path suffix) it carries.
type counted struct {
	http.RoundTripper
	procedure string
	calls     atomic.Int32
}

func (c *counted) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, c.procedure) {
		c.calls.Add(1)
	}
	return c.RoundTripper.RoundTrip(r)
}

// A remote handler reads its parents' results with hopper.ParentResults, as in process: with
// a call, or, with FetchParentResults, from its job (contract 19, docs/workflows.md).
func TestRemoteHandlerReadsItsParentsResults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  remote.Mode
		fetch bool
	}{{"stream", remote.Stream, false}, {"poll", remote.Poll, false}, {"stream-fetched", remote.Stream, true},
		{"poll-fetched", remote.Poll, true}} {
		t.Run(tc.name, func(t *testing.T) {
			url, client := serve(t)
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[part]) error {
				if job.Args.N < 0 {
					return hopper.NoRetry(errors.New("negative"))
				}
				return hopper.SetResult(ctx, job.Args.N)
			})
			hopper.AddWorkerFunc(ws, func(ctx context.Context, _ *hopper.Job[sumParts]) error {
				parents, err := hopper.ParentResults(ctx)
				if err != nil {
					return err
				}
				sum, order, failed := 0, []string{}, []string{}
				for _, p := range parents {
					order = append(order, p.ID)
					var n int
					if err := p.Decode(&n); errors.Is(err, hopper.ErrNoResult) {
						failed = append(failed, string(p.Outcome)+": "+p.Error)
						continue
					} else if err != nil {
						return err
					}
					sum += n
				}
				return hopper.SetResult(ctx, map[string]any{"sum": sum, "order": order, "failed": failed})
			})
			rt := &counted{RoundTripper: http.DefaultTransport, procedure: "/ParentResults"}
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: tc.mode, Concurrency: 3, PollWait: time.Second,
				HTTPClient: &http.Client{Transport: rt}, FetchParentResults: tc.fetch})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)

			var ids []string
			for _, n := range []int{5, -1, 7} {
				res, err := client.Enqueue(t.Context(), part{N: n}, nil)
				require.NoError(t, err)
				ids = append(ids, res.Job.ID)
			}
			named := []string{ids[2], ids[0], ids[1]}
			child, err := client.Enqueue(t.Context(), sumParts{}, &hopper.InsertOpts{After: named, OnParentFailure: hopper.ParentRun})
			require.NoError(t, err)
			job := waitFor(t, client, child.Job.ID, hopper.StateCompleted)
			var got struct {
				Sum    int
				Order  []string
				Failed []string
			}
			require.NoError(t, json.Unmarshal(job.Result, &got))
			require.Equal(t, 12, got.Sum)
			require.Equal(t, named, got.Order)
			require.Equal(t, []string{"failed: not retryable: negative"}, got.Failed)
			want := int32(1)
			if tc.fetch {
				want = 0 // they came with the job
			}
			require.Equal(t, want, rt.calls.Load(), "ParentResults calls")
		})
	}
}
