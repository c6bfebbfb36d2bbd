// Package server is `hopper serve`: the Connect RPC API (gRPC, gRPC-Web and JSON over HTTP)
// for clients and remote workers in any language, gRPC server reflection, /metrics, and the
// probes /livez, /healthz and /readyz, on one http.Handler.
// Every route is registered with the scope a caller's API key needs, so no route can be added
// without an auth policy. Every request gets an id (X-Request-Id); an INTERNAL answer carries
// only that id, and the error goes to the log with it (package apierr).
package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"connectrpc.com/connect/v2/connectproto"
	"connectrpc.com/grpcreflect/v2"
	"connectrpc.com/otelconnect"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/apierr"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/jsoncodec"
	"github.com/hopperjobs/hopper/internal/store"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is what an API key allows.
type Scope string

// Scopes. Admin allows everything.
const (
	ScopeEnqueue Scope = "enqueue" // Enqueue, EnqueueBatch
	ScopeWork    Scope = "work"    // Activate, StreamJobs and the calls fenced by a lease
	ScopeRead    Scope = "read"    // Get, List, Events, queue, node, worker and stream listings
	ScopeAdmin   Scope = "admin"   // everything: cancel, pause, resume, keys
	// ScopePublic marks routes anyone may call (the probes /livez, /healthz and /readyz,
	// ServerService, reflection).
	ScopePublic Scope = "public"
)

// Authenticator checks a request's credentials. Authenticate returns who is calling, or an
// error wrapping ErrUnauthenticated (no or bad credentials: 401), hopper.ErrUnavailable (the
// keys' store cannot be reached: 503 with Retry-After) or another error (the check itself
// failed: 500, with only the request id).
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (*Principal, error)
}

// Revalidator is an Authenticator that can tell whether a principal is still valid (its key
// not revoked since): long-lived streams check it now and then.
type Revalidator interface {
	StillValid(ctx context.Context, p *Principal) (bool, error)
}

// Principal is an authenticated caller: an API key's id, name and scopes.
type Principal struct {
	KeyID  string
	Name   string
	Scopes []Scope
}

// Allows reports whether p holds scope (admin holds every scope).
func (p *Principal) Allows(scope Scope) bool {
	for _, s := range p.Scopes {
		if s == scope || s == ScopeAdmin {
			return true
		}
	}
	return false
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxStreamsPerKey = 100
	DefaultMaxPollsPerKey   = 200
	// DefaultStreamKeepalive is hopper serve's Config.StreamKeepalive (--stream-keepalive).
	DefaultStreamKeepalive = 30 * time.Second
)

// Config configures a Server. Client is required.
type Config struct {
	// Client is the started Hopper client the server acts through.
	Client *hopper.Client
	Logger *slog.Logger
	// Auth checks API keys; nil lets every request through with every scope (only for a
	// server bound to a loopback address, which `hopper serve` enforces).
	Auth Authenticator
	// MaxBodyBytes bounds a request body (default 1 MiB); a larger one gets 413.
	MaxBodyBytes int64
	// StalledAfter is how long a running job may go without a sign of life before the API
	// shows it as stalled (default hopper.DefaultStalledAfter; negative turns it off).
	StalledAfter time.Duration
	// Keys, when set, lets admins manage API keys through the API (AdminService).
	Keys store.KeyStore
	// MaxStreamsPerKey and MaxPollsPerKey bound the open job streams and waiting long polls
	// of one API key (or of everyone, without keys); past them a caller gets 429.
	MaxStreamsPerKey int
	MaxPollsPerKey   int
	// StreamKeepalive is how often a job stream with nothing to push sends its worker a
	// keepalive (StreamJobsResponse.keepalive), so that proxies do not close it as idle and
	// the worker can tell a dead stream from a quiet one; 0 sends none (hopper serve sends
	// them every DefaultStreamKeepalive unless told otherwise). Proxies in front of the server
	// must allow a stream more idle time than this.
	StreamKeepalive time.Duration
	// Clock paces the server's own waits (a stream's claim coalescing and backoff, its key
	// revalidation) and stamps its registry of workers and streams. Default: the client's
	// clock (hopper.Config.Clock), so that a test that moves the client's fake clock moves the
	// server's too. Whether a job is stalled is still judged on the client's clock, the one
	// its timestamps are written with.
	Clock clock.Clock
	// Metrics, when set, is served on /metrics with the gauges read at scrape time: the job
	// counters and histograms, which count only when the same Metrics is one of the client's
	// Config.Observers.
	Metrics *hopperprom.Metrics
	// Build is the build the server reports (/readyz, ServerService.Info). Default: this
	// binary's, buildinfo.Read().
	Build buildinfo.Info
	// TracerProvider makes the spans of the RPC API (otelconnect: one server span per call,
	// continuing the caller's traceparent, whose trace an enqueue records in the job).
	// Default the OpenTelemetry global provider.
	TracerProvider trace.TracerProvider
}

// Server serves the API. Create it with New; it is an http.Handler.
type Server struct {
	cfg    Config
	client *hopper.Client
	api    workerapi.API // the client's side of the remote-worker protocol
	clock  clock.Clock
	// jobTimeout is the client's Config.JobTimeout, sent with every job to remote workers.
	jobTimeout time.Duration
	log        *slog.Logger
	mux        *http.ServeMux
	handler    http.Handler // mux behind the request ids
	routes     map[string]Scope
	errs       *connecthttp.ErrorWriter // refusals to gRPC callers (refuse)
	reg        *registry
	limits     *limiter
	readyMu    sync.RWMutex
	ready      bool
	// streamClaims is the outage state, and the backoff, of every stream's claims: one log
	// line when claims start failing, one when they work again, however many streams are open.
	streamClaims *backoff.Tracker
	loops        backoff.Set // the two above, for /readyz

	shutdownCtx context.Context // ends when Shutdown is called: streams and long polls stop
	shutdown    context.CancelFunc

	// pushFault, set by tests only, fails (or holds up) the pushes of a worker's streams.
	pushFault func(worker string) error
}

// New builds the server and registers every route.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("server: Config.Client is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxStreamsPerKey == 0 {
		cfg.MaxStreamsPerKey = DefaultMaxStreamsPerKey
	}
	if cfg.MaxPollsPerKey == 0 {
		cfg.MaxPollsPerKey = DefaultMaxPollsPerKey
	}
	if cfg.StalledAfter == 0 {
		cfg.StalledAfter = hopper.DefaultStalledAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.OrReal(cfg.Client.Config().Clock)
	}
	if cfg.Build == (buildinfo.Info{}) {
		cfg.Build = buildinfo.Read()
	}
	s := &Server{cfg: cfg, client: cfg.Client, api: workerapi.Of(cfg.Client), clock: cfg.Clock, jobTimeout: cfg.Client.Config().JobTimeout,
		log: cfg.Logger, mux: http.NewServeMux(),
		routes: map[string]Scope{}, errs: connecthttp.NewErrorWriter(), reg: newRegistry(), limits: newLimiter()}
	s.shutdownCtx, s.shutdown = context.WithCancel(context.Background())
	s.handler = apierr.WithRequestID(s.mux)
	s.streamClaims = s.loops.New(backoff.Config{Name: "claim jobs for streams", Policy: backoff.WorkPolicy,
		Clock: s.clock, Logger: s.log})

	// The remote workers this server serves count in its node's heartbeat (awaiting compute).
	workerapi.Of(cfg.Client).SetRemoteQueues(func() (queues, held []string) { return s.reg.queues(s.clock.Now()) })

	traced, err := tracing(cfg.TracerProvider)
	if err != nil {
		return nil, err
	}
	rpc := connect.NewServer(traced, s.guardErrors, unreadableRequests, s.releaseUnsent)
	hopperv1connect.RegisterJobServiceHandler(rpc, &jobService{s})
	hopperv1connect.RegisterWorkerServiceHandler(rpc, &workerService{s})
	hopperv1connect.RegisterQueueServiceHandler(rpc, &queueService{s})
	hopperv1connect.RegisterAdminServiceHandler(rpc, &adminService{s})
	hopperv1connect.RegisterDeadLetterServiceHandler(rpc, &deadLetterService{s})
	hopperv1connect.RegisterScheduleServiceHandler(rpc, &scheduleService{s})
	hopperv1connect.RegisterKindServiceHandler(rpc, &kindService{s})
	hopperv1connect.RegisterWorkflowServiceHandler(rpc, &workflowService{s})
	hopperv1connect.RegisterServerServiceHandler(rpc, &serverService{s})
	// gRPC server reflection (v1 and v1alpha), so grpcurl and other gRPC tools can list the
	// services and describe their messages, with api/'s comments, without a copy of api/.
	reflection, err := reflectionOptions()
	if err != nil { // a tree whose make gen did not run: serve the API without its comments
		s.log.Warn("gRPC reflection serves the API without its comments", "err", err)
	}
	grpcreflect.Register(rpc, reflection...)
	// Answers under compressMinBytes go uncompressed: most are a few bytes (Complete answers
	// nothing), and setting up gzip for each cost a quarter of a streaming worker's server time.
	// JSON is Hopper's own encoding (package jsoncodec): payloads inline, unknown fields refused.
	connecthttp.Mount(policyMux{s}, rpc, connecthttp.WithReadMaxBytes(int(cfg.MaxBodyBytes)),
		connecthttp.WithCompressMinBytes(compressMinBytes),
		connecthttp.WithCodecs(connectproto.NewBinaryCodec(), jsoncodec.Codec{}))

	s.handle("GET /livez", ScopePublic, http.HandlerFunc(livez))
	s.handle("GET /healthz", ScopePublic, http.HandlerFunc(s.healthz))
	s.handle("GET /readyz", ScopePublic, http.HandlerFunc(s.readyz))
	s.handle("GET /metrics", ScopeRead, s.metricsHandler())
	s.handle("POST /v1/async/{kind}", ScopeEnqueue, s.asyncEnqueue())
	s.handle("GET /v1/jobs/{id}", ScopeRead, s.asyncStatus())
	if err := s.mountDashboard(); err != nil {
		return nil, err
	}
	return s, nil
}

// tracing is the RPC API's OpenTelemetry interceptor (otelconnect), on tp or the global
// provider. A caller's traceparent is trusted, so that the server span, and the jobs it
// enqueues, continue the caller's trace (otelconnect's default starts a new trace linked to
// it). Its metrics are off: /metrics has Hopper's own.
func tracing(tp trace.TracerProvider) (connect.ServerInterceptor, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	i, err := otelconnect.NewServerInterceptor(otelconnect.WithTracerProvider(tp),
		otelconnect.WithPropagator(propagation.TraceContext{}), otelconnect.WithTrustRemote(), otelconnect.WithoutMetrics())
	if err != nil {
		return nil, fmt.Errorf("server: tracing interceptor: %w", err)
	}
	return i, nil
}

// compressMinBytes is the smallest answer the server compresses when the caller accepts it.
const compressMinBytes = 1024

// Shutdown ends open job streams and long polls (their workers are told the server is
// shutting down and streamed jobs go back to their queues) and marks the server not ready.
// Other requests finish normally: call it before http.Server.Shutdown.
func (s *Server) Shutdown() {
	s.SetReady(false)
	s.shutdown()
}

func (s *Server) shuttingDown() bool { return s.shutdownCtx.Err() != nil }

// untilShutdown returns ctx, also canceled when the server shuts down.
func (s *Server) untilShutdown(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.shutdownCtx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// SetReady makes /healthz answer 200 (true) or 503 (false), and /readyz 503 when false.
func (s *Server) SetReady(ready bool) {
	s.readyMu.Lock()
	s.ready = ready
	s.readyMu.Unlock()
}

func (s *Server) isReady() bool {
	s.readyMu.RLock()
	defer s.readyMu.RUnlock()
	return s.ready
}

// livez is the liveness probe: 200 while the process serves HTTP at all, whatever its store
// and readiness (restarting a process whose database is down helps nothing: /readyz says
// that).
func livez(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, "ok\n") //nolint:errcheck // best effort
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	ready := s.isReady()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "starting\n") //nolint:errcheck // best effort
		return
	}
	io.WriteString(w, "ok\n") //nolint:errcheck // best effort
}

// failingLoops returns the client's and the server's background loops whose last call to the
// store failed.
func (s *Server) failingLoops() []hopper.LoopStatus {
	return append(s.client.FailingLoops(), s.loops.Failing()...)
}

// ServeHTTP serves every route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Routes returns every registered route pattern with its scope, sorted.
func (s *Server) Routes() map[string]Scope {
	out := make(map[string]Scope, len(s.routes))
	for p, sc := range s.routes {
		out[p] = sc
	}
	return out
}

// RoutePatterns returns the registered patterns, sorted.
func (s *Server) RoutePatterns() []string {
	out := make([]string, 0, len(s.routes))
	for p := range s.routes {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// handle registers h at pattern behind the body limit and the auth check for scope.
func (s *Server) handle(pattern string, scope Scope, h http.Handler) {
	if _, dup := s.routes[pattern]; dup {
		panic("server: route registered twice: " + pattern)
	}
	s.routes[pattern] = scope
	h = s.authorize(scope, h)
	if !streamedRequests[pattern] {
		h = s.limitBody(h)
	}
	s.mux.Handle(pattern, h)
}

// Protocols are the HTTP versions a Hopper server speaks: HTTP/1.1, and HTTP/2, chosen by ALPN
// over TLS and with prior knowledge in plain text (h2c), as gRPC clients without TLS and the
// report streams of remote workers (WorkerService.ReportStream) need it.
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// streamedRequests are the procedures whose request is a long-lived stream of messages: each
// message is bounded by MaxBodyBytes (Connect's read limit), the stream as a whole is not.
var streamedRequests = map[string]bool{hopperv1connect.WorkerServiceReportStreamProcedure: true}

// policyMux registers Connect's routes with the scope of each procedure; a procedure
// without a policy panics at start-up, so none can be served unguarded.
type policyMux struct{ s *Server }

func (m policyMux) Handle(pattern string, h http.Handler) {
	scope, ok := procedureScopes[pattern]
	if !ok {
		panic("server: no auth policy for route " + pattern)
	}
	m.s.handle(pattern, scope, h)
}

// procedureScopes is the auth policy of every RPC route, as docs/security.md lists it. The
// per-service catch-alls (which answer "unimplemented" for unknown methods) need the read
// scope.
var procedureScopes = map[string]Scope{
	hopperv1connect.JobServiceEnqueueProcedure:      ScopeEnqueue,
	hopperv1connect.JobServiceEnqueueBatchProcedure: ScopeEnqueue,
	hopperv1connect.JobServiceGetProcedure:          ScopeRead,
	hopperv1connect.JobServiceListProcedure:         ScopeRead,
	hopperv1connect.JobServiceEventsProcedure:       ScopeRead,
	hopperv1connect.JobServiceCancelProcedure:       ScopeAdmin,
	hopperv1connect.JobServiceResumeProcedure:       ScopeEnqueue,
	hopperv1connect.JobServiceRetryProcedure:        ScopeAdmin,
	hopperv1connect.JobServiceSetRetriesProcedure:   ScopeAdmin,

	hopperv1connect.WorkerServiceActivateProcedure:       ScopeWork,
	hopperv1connect.WorkerServiceStreamJobsProcedure:     ScopeWork,
	hopperv1connect.WorkerServiceCompleteProcedure:       ScopeWork,
	hopperv1connect.WorkerServiceFailProcedure:           ScopeWork,
	hopperv1connect.WorkerServiceExtendLeaseProcedure:    ScopeWork,
	hopperv1connect.WorkerServiceReleaseProcedure:        ScopeWork,
	hopperv1connect.WorkerServiceSnoozeProcedure:         ScopeWork,
	hopperv1connect.WorkerServiceSuspendProcedure:        ScopeWork,
	hopperv1connect.WorkerServiceReportProcedure:         ScopeWork,
	hopperv1connect.WorkerServiceReportStreamProcedure:   ScopeWork,
	hopperv1connect.WorkerServiceHeartbeatProcedure:      ScopeWork,
	hopperv1connect.WorkerServiceReportProgressProcedure: ScopeWork,
	hopperv1connect.WorkerServiceHoldProcedure:           ScopeWork,
	hopperv1connect.WorkerServiceParentResultsProcedure:  ScopeWork,
	hopperv1connect.WorkerServiceSpawnProcedure:          ScopeWork,

	hopperv1connect.QueueServiceListProcedure:   ScopeRead,
	hopperv1connect.QueueServicePauseProcedure:  ScopeAdmin,
	hopperv1connect.QueueServiceResumeProcedure: ScopeAdmin,
	hopperv1connect.QueueServiceSetProcedure:    ScopeAdmin,

	hopperv1connect.AdminServiceListNodesProcedure:   ScopeRead,
	hopperv1connect.AdminServiceListWorkersProcedure: ScopeRead,
	hopperv1connect.AdminServiceListStreamsProcedure: ScopeRead,
	hopperv1connect.AdminServiceCreateKeyProcedure:   ScopeAdmin,
	hopperv1connect.AdminServiceListKeysProcedure:    ScopeAdmin,
	hopperv1connect.AdminServiceRevokeKeyProcedure:   ScopeAdmin,
	hopperv1connect.AdminServiceImportKeyProcedure:   ScopeAdmin,

	"/" + hopperv1connect.JobServiceName + "/":    ScopeRead,
	"/" + hopperv1connect.WorkerServiceName + "/": ScopeRead,
	"/" + hopperv1connect.QueueServiceName + "/":  ScopeRead,
	"/" + hopperv1connect.AdminServiceName + "/":  ScopeRead,

	hopperv1connect.DeadLetterServiceListProcedure:        ScopeRead,
	hopperv1connect.DeadLetterServiceStatsProcedure:       ScopeRead,
	hopperv1connect.DeadLetterServiceListReplaysProcedure: ScopeRead,
	hopperv1connect.DeadLetterServiceReplayProcedure:      ScopeAdmin,
	hopperv1connect.DeadLetterServiceReplayManyProcedure:  ScopeAdmin,
	hopperv1connect.DeadLetterServiceRetryManyProcedure:   ScopeAdmin,
	"/" + hopperv1connect.DeadLetterServiceName + "/":     ScopeRead,

	hopperv1connect.ScheduleServiceListProcedure:    ScopeRead,
	hopperv1connect.ScheduleServiceAddProcedure:     ScopeAdmin,
	hopperv1connect.ScheduleServiceRemoveProcedure:  ScopeAdmin,
	hopperv1connect.ScheduleServicePauseProcedure:   ScopeAdmin,
	hopperv1connect.ScheduleServiceResumeProcedure:  ScopeAdmin,
	hopperv1connect.ScheduleServiceRunProcedure:     ScopeAdmin,
	"/" + hopperv1connect.ScheduleServiceName + "/": ScopeRead,

	hopperv1connect.KindServiceListProcedure:    ScopeRead,
	hopperv1connect.KindServiceSetProcedure:     ScopeAdmin,
	hopperv1connect.KindServiceDisableProcedure: ScopeAdmin,
	hopperv1connect.KindServiceEnableProcedure:  ScopeAdmin,
	hopperv1connect.KindServiceCompactProcedure: ScopeAdmin,
	hopperv1connect.KindServiceLineageProcedure: ScopeRead,
	"/" + hopperv1connect.KindServiceName + "/": ScopeRead,

	hopperv1connect.WorkflowServiceEnqueueWorkflowProcedure: ScopeEnqueue,
	hopperv1connect.WorkflowServiceGetWorkflowProcedure:     ScopeRead,
	hopperv1connect.WorkflowServiceListWorkflowsProcedure:   ScopeRead,
	hopperv1connect.WorkflowServiceCancelWorkflowProcedure:  ScopeAdmin,
	"/" + hopperv1connect.WorkflowServiceName + "/":         ScopeRead,

	// What the server is (its build, its store's kind and schema version) is as public as
	// /readyz, which says the same: a worker with a key of any scope, or a tool with none
	// yet, can check which server it talks to (docs/security.md).
	hopperv1connect.ServerServiceInfoProcedure:    ScopePublic,
	"/" + hopperv1connect.ServerServiceName + "/": ScopeRead,

	// Reflection reveals the schema, which api/ publishes anyway, and no data: public, as on
	// most gRPC servers, so that grpcurl can describe a call before any key is involved and a
	// key of any scope can use it (docs/security.md).
	reflectionProcedure(grpcreflect.ReflectV1ServiceName):      ScopePublic,
	reflectionProcedure(grpcreflect.ReflectV1AlphaServiceName): ScopePublic,
	"/" + grpcreflect.ReflectV1ServiceName + "/":               ScopePublic,
	"/" + grpcreflect.ReflectV1AlphaServiceName + "/":          ScopePublic,
}

// reflectionProcedure is the route of the reflection service named service.
func reflectionProcedure(service string) string { return "/" + service + "/ServerReflectionInfo" }

// unreadableRequests makes a request the server cannot read the caller's error. Connect
// reports a stream's malformed or truncated request framing as internal ("protocol error:
// incomplete envelope"), which reads as the server's failure; it is INVALID_ARGUMENT. A
// clean end of the request stream (io.EOF) stays as it is. Found by FuzzRPC.
func unreadableRequests(next connect.ServerFunc) connect.ServerFunc {
	return func(ctx context.Context, spec connect.Spec, stream connect.ServerStream) error {
		return next(ctx, spec, &requestStream{ServerStream: stream})
	}
}

type requestStream struct{ connect.ServerStream }

func (r *requestStream) Receive(msg any) error {
	err := r.ServerStream.Receive(msg)
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	if code := connect.CodeOf(err); code == connect.CodeInternal || code == connect.CodeUnknown {
		var ce *connect.Error
		why := err.Error()
		if errors.As(err, &ce) {
			why = ce.Message()
		}
		return connect.NewError(connect.CodeInvalidArgument, "unreadable request: "+why).WithCause(err)
	}
	return err
}

// guardErrors is the RPC API's last word on errors. A handler's panic becomes INTERNAL. An
// INTERNAL answer, or an error no handler mapped to a code (UNKNOWN), is logged with the
// procedure and the request id, and its message becomes "internal error (request id …)":
// internal text never reaches the caller. That includes Connect's own error when a unary
// response cannot be marshaled, which the generated handler returns from its Send. A store's
// refusal of a value is logged likewise (its answer is already generic: rpcError). An
// UNAVAILABLE answer gets Retry-After.
func (s *Server) guardErrors(next connect.ServerFunc) connect.ServerFunc {
	return func(ctx context.Context, spec connect.Spec, stream connect.ServerStream) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("panic in RPC handler: %v\n%s", v, debug.Stack())
			}
			err = s.answer(ctx, spec.Procedure, err)
		}()
		return next(ctx, spec, stream)
	}
}

// answer is the error the caller of procedure gets for err; an UNAVAILABLE answer also tells
// the caller when to retry (Retry-After).
func (s *Server) answer(ctx context.Context, procedure string, err error) error {
	err = s.itemAnswer(ctx, procedure, err)
	if connect.CodeOf(err) == connect.CodeUnavailable {
		if info, ok := connect.CallInfoForServerContext(ctx); ok {
			info.ResponseHeader().Set("Retry-After", apierr.RetryAfter)
		}
	}
	return err
}

// itemAnswer is answer without touching the call's headers: the answer to one item of a
// batch (a Report's), whose items are decided concurrently and share the call's headers.
func (s *Server) itemAnswer(ctx context.Context, procedure string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) && connect.CodeOf(err) == connect.CodeUnknown:
		return connect.NewError(connect.CodeCanceled, "canceled").WithCause(err)
	case errors.Is(err, context.DeadlineExceeded) && connect.CodeOf(err) == connect.CodeUnknown:
		return connect.NewError(connect.CodeDeadlineExceeded, "deadline exceeded").WithCause(err)
	}
	switch connect.CodeOf(err) {
	case connect.CodeInternal, connect.CodeUnknown, connect.CodeDataLoss:
		id := apierr.IDFrom(ctx)
		s.log.Error("rpc failed", "procedure", procedure, "request_id", id, "err", err)
		return connect.NewError(connect.CodeInternal, apierr.InternalMessage(id))
	case connect.CodeInvalidArgument:
		if apierr.StoreRefusal(err) { // a value the checks at the door should have refused
			s.log.Warn("the store refused a request's value", "procedure", procedure,
				"request_id", apierr.IDFrom(ctx), "err", errors.Unwrap(err)) // the cause, not the answer
		}
	}
	return err
}
