package hopperhttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperhttp"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// failingStore fails reads and inserts with err while it is set.
type failingStore struct {
	*sqlitestore.Store
	err atomic.Pointer[error]
}

func (f *failingStore) JobGet(ctx context.Context, id string) (*hopper.JobRow, error) {
	if err := f.err.Load(); err != nil {
		return nil, *err
	}
	return f.Store.JobGet(ctx, id)
}

func (f *failingStore) JobInsertMany(ctx context.Context, ps []*store.InsertParams) ([]*store.InsertResult, error) {
	if err := f.err.Load(); err != nil {
		return nil, *err
	}
	return f.Store.JobInsertMany(ctx, ps)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A store that cannot be reached is 503 with Retry-After; any other failure is 500 whose
// message is only the request id, which the handler sets on X-Request-Id even when no server
// in front of it gave the request one, and logs with the error.
func TestStoreFailuresAre503OrAnInternalErrorWithARequestID(t *testing.T) {
	t.Parallel()
	var fs *failingStore
	logs := &syncBuffer{}
	b := setup(t, setupOpts{
		config: func(c *hopper.Config) {
			fs = &failingStore{Store: c.Store.(*sqlitestore.Store)}
			c.Store = fs
		},
		options: []hopperhttp.Option{hopperhttp.WithLogger(slog.New(slog.NewTextHandler(logs, nil)))},
	})
	_, job := b.post(t, "/v1/async/send-email/acme", `{"to":"a@b.c"}`, nil)

	down := fmt.Errorf("dial tcp 10.0.0.9:5432: connection refused: %w", store.ErrUnavailable)
	fs.err.Store(&down)
	for _, r := range []*response{
		b.do(t, http.MethodPost, "/v1/async/send-email/acme", `{"to":"a@b.c"}`, nil),
		b.do(t, http.MethodGet, "/v1/jobs/"+job.Job.ID, "", nil),
	} {
		r.requireError(t, http.StatusServiceUnavailable, "unavailable")
		require.Equal(t, "5", r.header.Get("Retry-After"))
		require.NotContains(t, r.body, "10.0.0.9")
	}

	broken := errors.New("disk I/O error on /var/lib/hopper.db")
	fs.err.Store(&broken)
	for _, r := range []*response{
		b.do(t, http.MethodPost, "/v1/async/send-email/acme", `{"to":"a@b.c"}`, nil),
		b.do(t, http.MethodGet, "/v1/jobs/"+job.Job.ID, "", nil),
	} {
		r.requireError(t, http.StatusInternalServerError, "internal")
		id := r.header.Get("X-Request-Id")
		require.NotEmpty(t, id)
		var e struct{ Message string }
		r.decode(t, &e)
		require.Equal(t, "internal error (request id "+id+")", e.Message)
		require.Contains(t, logs.String(), "request_id="+id)
	}
	require.Contains(t, logs.String(), "/var/lib/hopper.db", "the error is in the log, not the answer")
}
