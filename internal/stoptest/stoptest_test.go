package stoptest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/stretchr/testify/require"
)

// stopper's Stop waits for release or its context, then returns err.
type stopper struct {
	release chan struct{}
	ignore  bool // ignore the context (a Stop that hangs)
	err     error
}

func (s *stopper) Stop(ctx context.Context) error {
	if s.ignore {
		<-s.release
		return s.err
	}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return s.err
}

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) { r.errs = append(r.errs, format) }
func (r *recorder) Helper()                           {}

func TestWithin(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	close(done)

	r := &recorder{TB: t}
	stoptest.Within(r, &stopper{release: done}, time.Second)
	require.Empty(t, r.errs, "a prompt stop passes")

	r = &recorder{TB: t}
	stoptest.Within(r, &stopper{release: done, err: errors.New("flush")}, time.Second)
	require.Len(t, r.errs, 1, "Stop's error fails the test")

	r = &recorder{TB: t}
	stoptest.Within(r, &stopper{release: make(chan struct{})}, 50*time.Millisecond)
	require.Len(t, r.errs, 1, "a stop that needed its deadline fails the test")
	require.Contains(t, r.errs[0], "did not finish within")

	r = &recorder{TB: t}
	hung := &stopper{release: make(chan struct{}), ignore: true}
	defer close(hung.release) // let its goroutine end
	stoptest.Within(r, hung, 10*time.Millisecond)
	require.Len(t, r.errs, 1, "a Stop that never returns fails the test instead of hanging it")
	require.Contains(t, r.errs[0], "has not returned")
}
