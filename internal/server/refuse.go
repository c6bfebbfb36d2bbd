package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"connectrpc.com/connect/v2"
)

// refuse answers a request the server turns away before its handler runs (no or a bad key, a
// missing scope, a body over the limit, a caller over its long-poll limit, a key check that
// cannot be done) with code and message, in the caller's protocol. It is the only place that
// writes these answers.
//
// gRPC and gRPC-Web clients read a call's outcome from its status (grpc-status and
// grpc-message, in trailers or, for gRPC-Web, trailer-like headers), not from the HTTP status,
// which must be 200: they get it there, written by Connect's ErrorWriter, so grpcurl or any
// gRPC library sees UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED or UNAVAILABLE with
// the message. Everyone else (Connect, JSON over HTTP, curl) gets status and the Connect JSON
// error {"code", "message"}, which Connect clients read for any RPC and plain HTTP clients can
// read too. Headers already set on w (Retry-After, WWW-Authenticate, X-Request-Id) go out in
// both cases.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code connect.Code, message string) {
	if speaksGRPC(r) {
		_ = s.errs.Write(w, r, connect.NewError(code, message)) // the client may be gone
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code.String(), "message": message}) //nolint:errcheck // the client may be gone
}

// speaksGRPC reports whether r is a gRPC or gRPC-Web call (Content-Type application/grpc,
// application/grpc+proto, application/grpc-web+json…).
func speaksGRPC(r *http.Request) bool {
	return r.Method == http.MethodPost &&
		strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/grpc")
}
