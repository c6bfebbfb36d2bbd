package remote_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// blackhole answers each job stream with one keepalive announcing period, then says nothing
// more while keeping the stream open, as a proxy that lost the server behind it might. It
// records the fake time each stream opened.
type blackhole struct {
	clk    *clock.Fake
	period time.Duration
	mu     sync.Mutex
	opened []time.Time
}

func (b *blackhole) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/StreamJobs") {
			next.ServeHTTP(w, r)
			return
		}
		b.mu.Lock()
		b.opened = append(b.opened, b.clk.Now())
		b.mu.Unlock()
		msg, _ := proto.Marshal(&hopperv1.StreamJobsResponse{Keepalive: durationpb.New(b.period)})
		frame := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		w.Header().Set("Content-Type", "application/connect+proto")
		w.WriteHeader(http.StatusOK)
		w.Write(append(frame, msg...)) //nolint:errcheck // the worker may be gone
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

func (b *blackhole) opens() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.opened...)
}

// A stream on which the server says nothing for three of the keepalive periods it announced
// is dead to the worker: it reconnects, logging why. The period is the server's (10 s here,
// not the default 30 s): the worker reconnects after 30 s of silence, not 90 s.
func TestSilentStreamIsReconnected(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	b := &blackhole{clk: clk, period: 10 * time.Second}
	ts, _ := remote.ServeForTest(t, remote.ServeOptions{Clock: clk, Handler: b.wrap})
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error { return nil })
	logs := &logBuffer{}
	w, err := remote.NewOnClock(remote.Config{URL: ts.URL, Workers: ws, Concurrency: 1, Name: "listener",
		Logger: slog.New(slog.NewTextHandler(logs, nil))}, clk)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	require.Eventually(t, func() bool { return len(b.opens()) == 1 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		clk.Advance(time.Second)
		return len(b.opens()) == 2
	}, 20*time.Second, 20*time.Millisecond, "the silent stream is reopened")
	opens := b.opens()
	silent := opens[1].Sub(opens[0])
	require.GreaterOrEqual(t, silent, 30*time.Second, "not before three periods of silence")
	require.Less(t, silent, 60*time.Second, "after about three periods, not the default's nine")
	require.Contains(t, logs.String(), "job stream silent: no message from the server for 30s (3 keepalive periods)")
}
