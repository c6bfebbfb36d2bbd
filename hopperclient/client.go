// Package hopperclient is the Go client of a running Hopper server (hopper serve). It
// enqueues, reads, cancels, resumes and replays jobs and workflows and manages queues, kinds,
// schedules and API keys through the server's API, with the types of package hopper
// (hopper.InsertOpts, hopper.JobRow, hopper.ListParams, hopper.Schedule…) and its errors, so
// that code written against a *hopper.Client on a database works through a server with few
// changes. To run
// jobs outside the server, use package remote.
//
//	client, err := hopperclient.New(hopperclient.Config{URL: "http://127.0.0.1:7070", APIKey: key})
//	res, err := client.Enqueue(ctx, SendEmail{To: "a@example.com"}, &hopper.InsertOpts{Queue: "mail"})
//
// # Errors
//
// A refusal of the server is an error that errors.Is matches with the Hopper error it means,
// whose message is the server's:
//
//   - INVALID_ARGUMENT is a *hopper.ValidationError naming the field the server named (so
//     errors.Is(err, hopper.ErrInvalid) holds); a refusal that names no field wraps
//     hopper.ErrInvalid.
//   - NOT_FOUND wraps hopper.ErrNotFound; FAILED_PRECONDITION (a transition the job's state
//     refuses) hopper.ErrInvalidTransition; ALREADY_EXISTS (an idempotency conflict, a key
//     name in use, a schedule declared in code) hopper.ErrDuplicate.
//   - UNAVAILABLE, and a server that cannot be reached, wrap hopper.ErrUnavailable: retry
//     later, enqueues with an idempotency key.
//   - UNAUTHENTICATED wraps ErrUnauthenticated, PERMISSION_DENIED ErrPermissionDenied.
//   - A call canceled or past its deadline wraps context.Canceled or
//     context.DeadlineExceeded.
//
// Every such error also wraps the *connect.Error of the answer: connect.CodeOf(err) gives its
// code (RESOURCE_EXHAUSTED, INTERNAL…).
//
// Options the API does not carry are refused rather than dropped: InsertOpts.ResultTTL (the
// server's --result-ttl applies) and ListParams.ArgsContains are *hopper.ValidationError.
package hopperclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
)

// Config says which server a Client talks to, and how.
type Config struct {
	// URL is the server's base URL: "http://127.0.0.1:7070", or https with TLS. Required.
	URL string
	// APIKey is sent as "Authorization: Bearer <key>" with every call; empty sends none, for
	// a server without keys. The key's scopes bound what the client may do: enqueue for
	// Enqueue and Resume, read to look (Get, List, Queues…), admin for the rest.
	APIKey string
	// HTTPClient carries the calls (default http.DefaultClient). Its Timeout, when set,
	// bounds every call, as each call's context does.
	HTTPClient *http.Client
}

// validate checks cfg and fills in its defaults.
func (cfg *Config) validate() error {
	if cfg.URL == "" {
		return &hopper.ValidationError{Field: "Config.URL", Reason: "is required"}
	}
	if !strings.Contains(cfg.URL, "://") {
		return &hopper.ValidationError{Field: "Config.URL",
			Reason: fmt.Sprintf("%q has no scheme: write http://%s (or https:// for a server with TLS)", cfg.URL, cfg.URL)}
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &hopper.ValidationError{Field: "Config.URL",
			Reason: fmt.Sprintf("%q is not an http or https URL with a host, such as http://127.0.0.1:7070", cfg.URL)}
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if strings.ContainsFunc(cfg.APIKey, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		// It goes into a header: a line break there would end it.
		return &hopper.ValidationError{Field: "Config.APIKey", Reason: "holds a space or a control character"}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return nil
}

// Client calls a server's API. Create it with New. It holds no connection of its own (its
// HTTPClient does) and starts no goroutine, so it needs no closing. It is safe for concurrent
// use.
type Client struct {
	jobs      hopperv1connect.JobServiceClient
	queues    hopperv1connect.QueueServiceClient
	kinds     hopperv1connect.KindServiceClient
	admin     hopperv1connect.AdminServiceClient
	dlq       hopperv1connect.DeadLetterServiceClient
	schedules hopperv1connect.ScheduleServiceClient
	server    hopperv1connect.ServerServiceClient
	workflows hopperv1connect.WorkflowServiceClient
}

// New checks cfg and returns a client of the server at cfg.URL. It does not call the server:
// a server that cannot be reached shows in the first call's error. A bad cfg is a
// *hopper.ValidationError naming its field (Config.URL, Config.APIKey).
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("hopperclient: %w", err)
	}
	var interceptors []connect.ClientInterceptor
	if cfg.APIKey != "" {
		interceptors = append(interceptors, bearer(cfg.APIKey))
	}
	c := connect.NewClient(connecthttp.NewTransport(cfg.HTTPClient, cfg.URL), interceptors...)
	return &Client{
		jobs: hopperv1connect.NewJobServiceClient(c), queues: hopperv1connect.NewQueueServiceClient(c),
		kinds: hopperv1connect.NewKindServiceClient(c), admin: hopperv1connect.NewAdminServiceClient(c),
		dlq: hopperv1connect.NewDeadLetterServiceClient(c), schedules: hopperv1connect.NewScheduleServiceClient(c),
		server: hopperv1connect.NewServerServiceClient(c), workflows: hopperv1connect.NewWorkflowServiceClient(c),
	}, nil
}

// bearer sends key as "Authorization: Bearer <key>" with every call.
func bearer(key string) connect.ClientInterceptor {
	return func(next connect.ClientFunc) connect.ClientFunc {
		return func(ctx context.Context, spec connect.Spec) (connect.ClientStream, error) {
			ctx, info := connect.NewClientContext(ctx)
			info.RequestHeader().Set("Authorization", "Bearer "+key)
			return next(ctx, spec)
		}
	}
}
