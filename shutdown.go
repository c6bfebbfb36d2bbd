package hopper

import (
	"context"
	"os"
	"os/signal"
	"time"
)

// ShutdownContext returns the context to pass to Client.Stop when a process shuts down: it
// ends after grace (running jobs get that long to finish before they are canceled and
// released) or at once when one of sigs arrives (a second Ctrl-C: stop hard). Call the
// CancelFunc when Stop returns.
//
//	<-ctx.Done() // first signal, e.g. from signal.NotifyContext
//	stopCtx, cancel := hopper.ShutdownContext(10*time.Second, os.Interrupt, syscall.SIGTERM)
//	defer cancel()
//	err := client.Stop(stopCtx)
func ShutdownContext(grace time.Duration, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		<-done
		signal.Stop(ch)
	}
}
