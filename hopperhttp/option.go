package hopperhttp

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// Defaults of the options.
const (
	// DefaultStatusPrefix is where StatusHandler is expected to be mounted.
	DefaultStatusPrefix = "/v1/jobs"
	// DefaultMaxBodyBytes bounds a request body (1 MiB, Hopper's default args limit).
	DefaultMaxBodyBytes = 1 << 20
)

// Option configures AsyncHandler, AsyncKindHandler and StatusHandler. Options a handler has
// no use for are ignored.
type Option func(*config)

type config struct {
	queue       string
	priority    int
	maxAttempts int
	prefix      string
	maxBody     int64
	skip        map[string]bool
	log         *slog.Logger
	// identityOnly reports whether an enqueue's caller may see no more of its job than what
	// identifies it (WithIdentityOnly).
	identityOnly func(*http.Request) bool
}

func newConfig(opts []Option) config {
	cfg := config{prefix: DefaultStatusPrefix, maxBody: DefaultMaxBodyBytes, skip: map[string]bool{},
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// statusURL is where the status of job id is served.
func (c *config) statusURL(id string) string {
	return c.prefix + "/" + url.PathEscape(id)
}

// WithQueue enqueues jobs on queue (default: the client's default queue).
func WithQueue(queue string) Option { return func(c *config) { c.queue = queue } }

// WithPriority gives jobs a priority, -1000 to 1000 (default 0).
func WithPriority(priority int) Option { return func(c *config) { c.priority = priority } }

// WithMaxAttempts bounds the attempts of each job, 1 to 1000 (default: the client's).
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithStatusPrefix is the URL StatusHandler is mounted under, used in Location and statusUrl
// (default "/v1/jobs"). It may be absolute ("https://api.example.com/v1/jobs"); a trailing
// slash is dropped.
func WithStatusPrefix(prefix string) Option {
	return func(c *config) { c.prefix = strings.TrimSuffix(prefix, "/") }
}

// WithMaxBodyBytes bounds a request body (default 1 MiB); a larger one gets 413. The client's
// Config.MaxArgsBytes applies too, whichever is smaller. n ≤ 0 keeps the default.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithoutHeaders keeps more request headers out of the job, for example an application's own
// credentials ("X-Auth-Token"). Names are case-insensitive.
func WithoutHeaders(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			c.skip[strings.ToLower(n)] = true
		}
	}
}

// WithIdentityOnly shows the caller of an enqueue, when only returns true for its request, no
// more of the job than what identifies it: its id, kind, queue, state and times, not its
// result, last error or progress. An Idempotency-Key can return a job someone else enqueued,
// and a caller allowed to enqueue may not be allowed to read jobs: `hopper serve` sets it for
// API keys without the read scope. Status answers (StatusHandler) are not affected: guard
// their route instead.
func WithIdentityOnly(only func(r *http.Request) bool) Option {
	return func(c *config) { c.identityOnly = only }
}

// WithLogger receives errors the caller cannot act on (a failing store); default: discarded.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}
