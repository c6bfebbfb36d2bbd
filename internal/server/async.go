package server

import (
	"net/http"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper/hopperhttp"
)

// The HTTP async endpoints (docs/async-endpoints.md): POST /v1/async/{kind} enqueues a job
// whose args are the JSON body and answers 202 with its status URL, GET /v1/jobs/{id} reports
// the job and can wait for it to end. Both are package hopperhttp's handlers, behind the same
// body limit and scopes as the RPC API.

// asyncEnqueue serves POST /v1/async/{kind}.
func (s *Server) asyncEnqueue() http.Handler {
	return hopperhttp.AsyncKindHandler(s.client, "kind", s.asyncOptions()...)
}

// asyncStatus serves GET /v1/jobs/{id}. A request that waits (?wait=) takes one of its API
// key's long-poll slots, shared with Activate's long polls: without the bound, one key could
// hold any number of connections that each read the store ten times a second.
func (s *Server) asyncStatus() http.Handler {
	status := hopperhttp.StatusHandler(s.client, s.asyncOptions()...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wait, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && wait > 0 {
			release, ok := s.limits.acquire("poll", principalFrom(r.Context()).KeyID, s.cfg.MaxPollsPerKey)
			if !ok {
				w.Header().Set("Retry-After", retryAfter)
				s.refuse(w, r, http.StatusTooManyRequests, connect.CodeResourceExhausted,
					"too many open long polls for this API key; retry in "+retryAfter+"s")
				return
			}
			defer release()
		}
		status.ServeHTTP(w, r)
	})
}

func (s *Server) asyncOptions() []hopperhttp.Option {
	return []hopperhttp.Option{
		hopperhttp.WithStatusPrefix("/v1/jobs"),
		// An enqueue-only key learns of the job it enqueued, or that its Idempotency-Key
		// returned, what identifies it: not another caller's result (as Enqueue over RPC).
		hopperhttp.WithIdentityOnly(func(r *http.Request) bool { return !principalFrom(r.Context()).Allows(ScopeRead) }),
		hopperhttp.WithMaxBodyBytes(s.cfg.MaxBodyBytes),
		hopperhttp.WithLogger(s.log),
	}
}
