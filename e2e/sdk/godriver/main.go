// Command godriver is the Go remote worker's driver for the SDK conformance suite (e2e/sdk):
// it runs the suite's cases (package cases) with a remote.Worker, configured from the
// environment as docs/development.md ("The SDK conformance suite") describes, and prints
// what the harness reads as JSON lines on standard output.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/e2e/sdk/cases"
	"github.com/hopperjobs/hopper/remote"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "godriver:", err)
		os.Exit(1)
	}
}

var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

// say prints one event line.
func say(event string, kv ...any) {
	m := map[string]any{"event": event}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	out.Lock()
	defer out.Unlock()
	_ = out.enc.Encode(m)
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func run() error {
	cfg := remote.Config{URL: os.Getenv("HOPPER_URL"), APIKey: os.Getenv("HOPPER_API_KEY"),
		Queue: os.Getenv("HOPPER_QUEUE"), Name: os.Getenv("HOPPER_WORKER_NAME")}
	var err error
	if cfg.Concurrency, err = envInt("HOPPER_CONCURRENCY", 4); err != nil {
		return err
	}
	if cfg.Prefetch, err = envInt("HOPPER_PREFETCH", 0); err != nil {
		return err
	}
	kindBound, err := envInt("HOPPER_KIND_CONCURRENCY", 0)
	if err != nil {
		return err
	}
	if kindBound > 0 {
		cfg.KindConcurrency = map[string]int{cases.Kind: kindBound}
	}
	lease, err := envInt("HOPPER_LEASE_MS", 0)
	if err != nil {
		return err
	}
	cfg.LeaseDuration = time.Duration(lease) * time.Millisecond
	cfg.FetchParentResults = os.Getenv("HOPPER_FETCH_PARENT_RESULTS") == "1"
	switch m := os.Getenv("HOPPER_MODE"); m {
	case "", "stream":
		cfg.Mode = remote.Stream
	case "poll":
		cfg.Mode = remote.Poll
	default:
		return fmt.Errorf("HOPPER_MODE %q: want stream or poll", m)
	}
	ws := hopper.NewWorkers()
	hopper.AddWorker[cases.Args](ws, cases.Handler{
		Begin: func(id string, attempt int) { say("begin", "id", id, "attempt", attempt) },
		End:   func(id string, attempt int) { say("end", "id", id, "attempt", attempt) },
	})
	hopper.AddBatchWorker[cases.BatchArgs](ws, cases.BatchHandler{
		Begin: func(ids []string) { say("batch", "ids", ids) },
	}, cases.BatchOpts)
	cfg.Workers = ws
	w, err := remote.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Start(context.Background()); err != nil {
		return err
	}
	say("ready", "sdk", "go", "extra", []string{"panic"})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := w.Stop(sctx)
			cancel()
			say("stopped")
			return err
		case <-tick.C:
			if err := w.Err(); err != nil {
				say("refused", "error", err.Error())
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = w.Stop(sctx)
				cancel()
				os.Exit(3)
			}
		}
	}
}
