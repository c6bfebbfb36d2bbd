package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/hopperjobs/hopper/internal/server"
	istore "github.com/hopperjobs/hopper/internal/store"
	"github.com/spf13/cobra"
)

// EchoKind is the kind `hopper serve` works itself: its jobs complete at once with their
// args as result, so a new installation has something to see end to end.
const EchoKind = "hopper.echo"

// echoArgs keeps an echo job's payload as it came.
type echoArgs struct{ raw json.RawMessage }

func (echoArgs) Kind() string { return EchoKind }

func (a *echoArgs) UnmarshalJSON(b []byte) error {
	a.raw = append(json.RawMessage(nil), b...)
	return nil
}

type serveOptions struct {
	addr           string
	noEcho         bool
	maxBody        int64
	maxStreams     int
	keepalive      time.Duration
	maxPolls       int
	shutdownGrace  time.Duration
	readHeaderWait time.Duration
	stalledAfter   time.Duration
	resultTTL      time.Duration // dlq.go
	dlqRetention   time.Duration
	dlqWebhook     string
	conns          int
	maxRescues     int
	tlsCert        string // serve_tls.go
	tlsKey         string
	maxCPU         fraction // limits.go
	maxMemory      byteSize
	logFormat      logFormat // serve_log.go
	logLevel       logLevel

	bootstrapKeyFile string // serve_keys.go
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Hopper server: the RPC API for clients and remote workers, the dashboard at /ui/, and /healthz",
		Long: `serve stores jobs in --database (a SQLite file, created if needed, or a postgres://
URL), hands them to workers in any language over the RPC API (Connect: gRPC, gRPC-Web and
JSON over HTTP at /hopper.v1.<Service>/<Method>) and runs the leader's duties (promoting
scheduled jobs, rescuing expired leases). The web dashboard is at /ui/ (/ leads there), behind a
login with an API key (admin to change things, read to look) once any key exists
(docs/dashboard.md).

With --max-cpu or --max-memory, a resource governor stops the server from taking new jobs
for its own workers (hopper.echo) while its process uses that much CPU or memory or more;
running jobs go on (docs/flow-control.md#resource-governor). Remote workers have their own.

It listens on 127.0.0.1:7070 unless --addr says otherwise. Once any API key exists
('hopper keys create'), every request needs one; a non-loopback --addr is refused while no
key exists. It works jobs of kind hopper.echo itself (they complete with their args as
result) unless --no-echo.

With --bootstrap-key-file (HOPPER_BOOTSTRAP_KEY_FILE: a Secret mounted as a file) it imports
the admin key that file holds at start, unless it is stored already, so a container needs no
key made by hand (docs/security.md#a-bootstrap-admin-key).

It logs to standard error, as text or JSON (--log-format) from --log-level on. /metrics has
Prometheus metrics, /livez and /readyz are the probes; with OTEL_EXPORTER_OTLP_ENDPOINT set,
it exports traces with OTLP over HTTP (docs/observability.md).

Every flag can also be set with an environment variable: HOPPER_ and the flag's name in upper
case with "-" as "_" (--database is HOPPER_DATABASE, --max-rescues HOPPER_MAX_RESCUES). A flag
given on the command line wins over its variable.`,
		Args:        cobra.NoArgs,
		RunE:        func(cmd *cobra.Command, _ []string) error { return serve(cmd, o) },
		Annotations: map[string]string{envFlagsAll: envFlagsAll},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7070", "address to listen on, HOST:PORT")
	f.BoolVar(&o.noEcho, "no-echo", false, "do not work hopper.echo jobs in the server")
	f.Int64Var(&o.maxBody, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body accepted (413 beyond)")
	f.IntVar(&o.maxStreams, "max-streams-per-key", server.DefaultMaxStreamsPerKey, "open job streams per API key (429 beyond)")
	f.IntVar(&o.maxPolls, "max-polls-per-key", server.DefaultMaxPollsPerKey, "waiting long polls per API key (429 beyond)")
	f.DurationVar(&o.keepalive, "stream-keepalive", server.DefaultStreamKeepalive, "send a keepalive on a job stream idle this long (0: none); proxies must allow streams more idle time")
	f.DurationVar(&o.shutdownGrace, "shutdown-grace", 10*time.Second, "how long running jobs get to finish on shutdown")
	f.DurationVar(&o.readHeaderWait, "read-header-timeout", 10*time.Second, "time allowed to read a request's headers")
	f.IntVar(&o.conns, "conns", 16, "PostgreSQL only: the connection pool size")
	f.DurationVar(&o.stalledAfter, "stalled-after", hopper.DefaultStalledAfter, "show a running job without heartbeat or progress for this long as stalled")
	f.IntVar(&o.maxRescues, "max-rescues", hopper.DefaultMaxRescues, "default number of times a job may lose its worker and be requeued before it fails with worker_lost, 1 to 1000, or -1 for no limit")
	addRetentionFlags(cmd, &o)
	addTLSFlags(cmd, &o)
	addGovernorFlags(cmd, &o)
	addLogFlags(cmd, &o)
	addBootstrapFlags(cmd, &o)
	return cmd
}

func serve(cmd *cobra.Command, o serveOptions) error {
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usageErrorf("--addr %q: %v", o.addr, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := newLogger(cmd.ErrOrStderr(), o.logFormat, o.logLevel)
	build := buildinfo.Read()
	log.Info("starting", "version", build.Version, "commit", build.Commit)

	if o.conns < 1 {
		return usageErrorf("--conns %d: want at least 1", o.conns)
	}
	if o.keepalive < 0 {
		return usageErrorf("--stream-keepalive %s: want 0 (none) or more", o.keepalive)
	}
	tlsCfg, err := loadTLS(o.tlsCert, o.tlsKey)
	if err != nil {
		return err
	}
	bootstrapKey, err := readBootstrapKey(o.bootstrapKeyFile, cmd.InOrStdin())
	if err != nil {
		return err
	}
	tp, stopTracing, err := otlpTracing(ctx, os.LookupEnv)
	if err != nil {
		return err
	}
	defer stopTracing(log)
	metrics := hopperprom.New()
	return withStoreAs(cmd, false, pgPool{maxConns: o.conns, listen: true}, func(st store) error {
		keys, ok := st.(istore.KeyStore)
		if !ok {
			return fmt.Errorf("this store keeps no API keys")
		}
		if bootstrapKey != "" {
			if err := importBootstrapKey(ctx, keys, bootstrapKey, o.bootstrapKeyFile, log); err != nil {
				return err
			}
		}
		auth, anyLive, err := keyAuth(ctx, keys, isLoopback(host))
		if err != nil {
			return err
		}
		if !anyLive && !isLoopback(host) {
			return usageErrorf("refusing to listen on %s without API keys: anyone who can reach it could run "+
				"and change jobs. Create a key first ('hopper keys create --name admin --scope admin', or "+
				"--bootstrap-key-file with a key from 'hopper keys generate') or listen on 127.0.0.1", o.addr)
		}
		ws := hopper.NewWorkers()
		if !o.noEcho {
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[echoArgs]) error {
				return hopper.SetResult(ctx, job.Args.raw)
			})
		}
		client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Logger: log, ResultTTL: o.resultTTL,
			DeadLetterRetention: o.dlqRetention, DeadLetterWebhook: o.dlqWebhook, MaxRescues: o.maxRescues,
			MaxCPU: float64(o.maxCPU), MaxMemory: int64(o.maxMemory),
			Observers: []hopper.Observer{metrics}, TracerProvider: tp})
		if err != nil {
			return governorError(err)
		}
		srv, err := server.New(server.Config{Client: client, Logger: log, Auth: auth, Keys: keys, StalledAfter: o.stalledAfter,
			MaxBodyBytes: o.maxBody, MaxStreamsPerKey: o.maxStreams, MaxPollsPerKey: o.maxPolls,
			StreamKeepalive: o.keepalive, Metrics: metrics, TracerProvider: tp, Build: build})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", o.addr, err)
		}
		if err := client.Start(ctx); err != nil {
			ln.Close()
			return err
		}
		return serveUntilDone(ctx, cmd, o, ln, tlsCfg, srv, client, log, anyLive)
	})
}

// serveUntilDone serves on ln (over TLS with tlsCfg, when set) until ctx ends, then shuts
// down: open streams and long polls end (streamed jobs go back to their queues), then running
// jobs get the grace period.
func serveUntilDone(ctx context.Context, cmd *cobra.Command, o serveOptions, ln net.Listener, tlsCfg *tls.Config,
	srv *server.Server, client *hopper.Client, log *slog.Logger, keys bool) error {
	httpSrv := newHTTPServer(o, srv, tlsCfg, log)
	served := make(chan error, 1)
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
		go func() { served <- httpSrv.ServeTLS(ln, "", "") }() // the certificate is in tlsCfg
	} else {
		go func() { served <- httpSrv.Serve(ln) }()
	}
	srv.SetReady(true)
	auth := "loopback only, open until the first API key is created"
	if keys {
		auth = "API keys required"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "hopper serving on %s://%s (%s), database %s\n", scheme, ln.Addr(), auth,
		describe(cmd, mustDatabase(cmd)))
	fmt.Fprintf(cmd.OutOrStdout(), "dashboard: %s://%s/ui/\n", scheme, ln.Addr())
	if !o.noEcho {
		fmt.Fprintf(cmd.OutOrStdout(), "try: curl -s -H 'Content-Type: application/json' "+
			"-d '{\"job\":{\"kind\":\"hopper.echo\",\"args\":{\"hello\":\"world\"}}}' "+
			"%s://%s/hopper.v1.JobService/Enqueue\n", scheme, ln.Addr())
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	log.Info("shutting down")
	srv.Shutdown() // streams and long polls end; streamed jobs are released
	shutCtx, cancel := context.WithTimeout(context.Background(), o.shutdownGrace)
	defer cancel()
	if err := httpSrv.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", "err", err)
	}
	stopCtx, cancelStop := hopper.ShutdownContext(o.shutdownGrace, os.Interrupt, syscall.SIGTERM)
	defer cancelStop()
	if err := client.Stop(stopCtx); err != nil {
		return fmt.Errorf("stop workers: %w", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return nil
}

func mustDatabase(cmd *cobra.Command) string {
	p, _ := databasePath(cmd)
	return p
}

// keyAuth returns the key check. On a loopback address it lets keyless requests through
// while no live key exists; elsewhere keys are required, and serving without any is refused.
func keyAuth(ctx context.Context, keys istore.KeyStore, loopback bool) (auth server.Authenticator, anyLive bool, err error) {
	all, err := keys.KeyList(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("read API keys: %w", err)
	}
	for _, k := range all {
		anyLive = anyLive || !k.Revoked()
	}
	return &server.KeyAuth{Keys: keys, OpenWithoutKeys: loopback}, anyLive, nil
}

// isLoopback reports whether host names only this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
