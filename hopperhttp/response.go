package hopperhttp

import (
	"encoding/json"
	"net/http"
)

// Error codes of the JSON error body, those of Connect and gRPC.
const (
	codeInvalidArgument   = "invalid_argument"
	codeNotFound          = "not_found"
	codeAlreadyExists     = "already_exists"
	codeResourceExhausted = "resource_exhausted"
	codeUnimplemented     = "unimplemented"
	codeInternal          = "internal"
)

// errorBody is every error's JSON body, the shape `hopper serve` answers with too.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Code: code, Message: message})
}

// methodNotAllowed answers 405 with the methods the handler serves.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, codeUnimplemented, r.Method+" is not allowed here; use "+allow)
}

// writeJSON answers with v as JSON. Status answers change, so nothing may cache them.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client may be gone
}
