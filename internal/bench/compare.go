package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/server"
)

// Comparison is one workload measured in process and through a server, stream and poll.
type Comparison struct {
	InProcess *Result `json:"in_process"`
	Stream    *Result `json:"stream"`
	Poll      *Result `json:"poll"`
}

// StreamRatio is the server's stream throughput as a fraction of the in-process one.
func (c *Comparison) StreamRatio() float64 { return c.Stream.JobsPerSec / c.InProcess.JobsPerSec }

// PollRatio is the server's poll throughput as a fraction of the in-process one.
func (c *Comparison) PollRatio() float64 { return c.Poll.JobsPerSec / c.InProcess.JobsPerSec }

// Compare measures cfg's workload three times on fresh stores of the same kind and settings:
// in process, then through a server that this process starts on a loopback port (as `hopper
// serve` does) and works with a remote worker, in stream mode (with cfg.Prefetch) and in poll
// mode. cfg.Server and cfg.Mode are ignored.
func Compare(ctx context.Context, cfg Config) (*Comparison, error) {
	cfg.Server, cfg.Mode = "", ""
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	in, err := Run(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("in process: %w", err)
	}
	cmp := &Comparison{InProcess: in}
	for _, mode := range []string{"stream", "poll"} {
		res, err := throughServer(ctx, cfg, mode)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", mode, err)
		}
		res.Durability = in.Durability
		if mode == "stream" {
			cmp.Stream = res
		} else {
			cmp.Poll = res
		}
	}
	return cmp, nil
}

// throughServer serves a fresh store on a loopback port and measures it with a remote worker
// in mode.
func throughServer(ctx context.Context, cfg Config, mode string) (_ *Result, err error) {
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Job metrics as in hopper serve: the server counts every remote attempt.
	metrics := hopperprom.New()
	client, err := hopper.NewClient(hopper.Config{Store: st, WorkerID: "bench-server", Logger: quiet,
		Observers: []hopper.Observer{metrics}})
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, client.Stop(stopCtx))
	}()
	srv, err := server.New(server.Config{Client: client, Logger: quiet, Metrics: metrics})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	httpSrv := &http.Server{Handler: srv, Protocols: server.Protocols(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	srv.SetReady(true)
	defer func() {
		srv.Shutdown()
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, httpSrv.Shutdown(shutCtx))
		if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
	}()
	cfg.Server, cfg.Mode = "http://"+ln.Addr().String(), mode
	if mode == "poll" {
		cfg.Prefetch = 0 // the stream's; a poll claims ahead
	}
	res, err := runRemote(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res.Store = fmt.Sprintf("%s through the server (%s)", storeName, mode)
	return res, nil
}
