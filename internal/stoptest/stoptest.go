// Package stoptest stops what a test started (a client, an engine, a remote worker) within a
// bound. A test that fails while a handler still waits for its context would otherwise hang in
// its cleanup's Stop(context.Background()) until go test's timeout, hiding every other result
// of its package; with Within it fails with a message and the package goes on.
package stoptest

import (
	"context"
	"testing"
	"time"
)

// Stopper is anything stopped with a context: hopper.Client, engine.Engine, remote.Worker.
type Stopper interface {
	Stop(ctx context.Context) error
}

// Within stops s with a context that ends after d. It fails t (without stopping the test, so
// later cleanups run) when Stop returns an error, when Stop needed the whole of d (something
// was still running and had to be canceled), or when Stop has not returned d/2 after that
// (Stop ignored its context; it is left running).
func Within(t testing.TB, s Stopper, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Stop(ctx) }()
	timer := time.NewTimer(d + d/2)
	defer timer.Stop()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			t.Errorf("%T.Stop did not finish within %s: something was still running and was canceled", s, d)
		}
		if err != nil {
			t.Errorf("%T.Stop: %v", s, err)
		}
	case <-timer.C:
		t.Errorf("%T.Stop has not returned %s after its %s deadline; left running", s, d/2, d)
	}
}
