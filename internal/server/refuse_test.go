package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// tokenAuth is an Authenticator whose answer the bearer token names: "read" and "work" are
// keys of that scope, "down" finds the keys' store unreachable, "broken" fails the check
// itself, anything else is refused.
type tokenAuth struct{}

func (tokenAuth) Authenticate(_ context.Context, r *http.Request) (*server.Principal, error) {
	switch token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); token {
	case "read", "work":
		return &server.Principal{KeyID: token, Scopes: []server.Scope{server.Scope(token)}}, nil
	case "down":
		return nil, fmt.Errorf("look up key: %w", hopper.ErrUnavailable)
	case "broken":
		return nil, errors.New("the key check broke")
	}
	return nil, fmt.Errorf("%w: an API key is required", server.ErrUnauthenticated)
}

// The refusals made before a handler runs reach gRPC and gRPC-Web callers as gRPC statuses,
// with the message and the headers Connect callers get; Connect callers keep the HTTP status.
func TestRefusalsSpeakTheCallersProtocol(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, func(c *server.Config, _ *sqlitestore.Store) {
		c.Auth, c.MaxPollsPerKey = tokenAuth{}, 1
	})
	url, hc := serveTLS(t, s.srv)

	// The work key's one long poll is taken.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiting := make(chan error, 1)
	go func() {
		cc := connect.NewClient(connecthttp.NewTransport(hc, url))
		cctx, info := connect.NewClientContext(ctx)
		info.RequestHeader().Set("Authorization", "Bearer work")
		_, err := hopperv1connect.NewWorkerServiceClient(cc).Activate(cctx,
			&hopperv1.ActivateRequest{Worker: "holder", RequestTimeout: durationpb.New(time.Minute)})
		waiting <- err
	}()
	admin := hopperv1connect.NewAdminServiceClient(connect.NewClient(connecthttp.NewTransport(hc, url)))
	require.Eventually(t, func() bool {
		cctx, info := connect.NewClientContext(t.Context())
		info.RequestHeader().Set("Authorization", "Bearer read")
		res, err := admin.ListWorkers(cctx, &hopperv1.ListWorkersRequest{})
		require.NoError(t, err)
		return len(res.GetWorkers()) == 1 && res.GetWorkers()[0].GetWaitingPolls() == 1
	}, 5*time.Second, time.Millisecond)

	cases := []struct {
		name, token string
		code        connect.Code
		status      int
		message     string
		header      string // a header the answer carries, with its value after "="
	}{
		{"no key", "", connect.CodeUnauthenticated, http.StatusUnauthorized, "an API key is required",
			`WWW-Authenticate=Bearer realm="hopper"`},
		{"a key without the scope", "read", connect.CodePermissionDenied, http.StatusForbidden,
			`lacks the "work" scope`, ""},
		{"the keys' store unreachable", "down", connect.CodeUnavailable, http.StatusServiceUnavailable,
			"job store unavailable", "Retry-After=5"},
		{"the key check broken", "broken", connect.CodeInternal, http.StatusInternalServerError,
			"internal error (request id ", ""},
		{"over the long-poll limit", "work", connect.CodeResourceExhausted, http.StatusTooManyRequests,
			"too many open long polls", "Retry-After=1"},
	}
	protocols := map[string]connecthttp.Option{"gRPC": connecthttp.WithGRPC(), "gRPC-Web": connecthttp.WithGRPCWeb()}
	for _, c := range cases {
		req := &hopperv1.ActivateRequest{Worker: "w", RequestTimeout: durationpb.New(time.Second)}
		for name, protocol := range protocols {
			cc := connect.NewClient(connecthttp.NewTransport(hc, url, protocol))
			cctx, info := connect.NewClientContext(t.Context())
			if c.token != "" {
				info.RequestHeader().Set("Authorization", "Bearer "+c.token)
			}
			_, err := hopperv1connect.NewWorkerServiceClient(cc).Activate(cctx, req)
			require.Equal(t, c.code, connect.CodeOf(err), "%s, %s: %v", name, c.name, err)
			ce, ok := errors.AsType[*connect.Error](err)
			require.True(t, ok, "%s, %s", name, c.name)
			require.Contains(t, ce.Message(), c.message, "%s, %s: a gRPC status, not an HTTP one", name, c.name)
			id := info.ResponseHeader().Get("X-Request-Id")
			require.NotEmpty(t, id, "%s, %s", name, c.name)
			if c.code == connect.CodeInternal {
				require.Equal(t, "internal error (request id "+id+")", ce.Message(), "%s", name)
			}
			if key, value, ok := strings.Cut(c.header, "="); ok {
				require.Equal(t, value, info.ResponseHeader().Get(key), "%s, %s", name, c.name)
			}
		}

		// Connect over HTTP/1.1, as curl calls it: the HTTP status and the JSON error.
		header := []string{"X-Request-Id", "refusal-test"}
		if c.token != "" {
			header = append(header, "Authorization", "Bearer "+c.token)
		}
		resp, body := post(t, s.ts.URL+hopperv1connect.WorkerServiceActivateProcedure,
			`{"worker":"w","requestTimeout":"1s"}`, header...)
		require.Equal(t, c.status, resp.StatusCode, "Connect, %s: %s", c.name, body)
		code, message := errorBody(t, body)
		require.Equal(t, c.code.String(), code, "Connect, %s", c.name)
		require.Contains(t, message, c.message, "Connect, %s", c.name)
		require.Equal(t, "refusal-test", resp.Header.Get("X-Request-Id"))
		if key, value, ok := strings.Cut(c.header, "="); ok {
			require.Equal(t, value, resp.Header.Get(key), "Connect, %s", c.name)
		}
	}
	cancel()
	<-waiting
}

// A gRPC request whose Content-Length is over the body limit is refused before it is read:
// HTTP 200 with RESOURCE_EXHAUSTED in the trailers, as a gRPC client reads it.
func TestABodyOverTheLimitIsAGRPCStatus(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, func(c *server.Config, _ *sqlitestore.Store) { c.MaxBodyBytes = 1024 })
	url, hc := serveTLS(t, s.srv)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+hopperv1connect.JobServiceEnqueueProcedure,
		bytes.NewReader(envelope(0, make([]byte, 2048))))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/grpc", resp.Header.Get("Content-Type"))
	require.Equal(t, "8", resp.Trailer.Get("Grpc-Status"), "RESOURCE_EXHAUSTED")
	require.Contains(t, resp.Trailer.Get("Grpc-Message"), "more than the limit of 1024")
}
