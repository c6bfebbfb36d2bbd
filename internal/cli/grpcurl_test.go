package cli

import (
	"context"
	"encoding/json"
	"errors"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// grpcurl returns the path of grpcurl (github.com/fullstorydev/grpcurl): on PATH or in
// $(go env GOPATH)/bin, where .ci/run installs it. Without it the test is skipped, except
// under CI=true, where it must run.
func grpcurl(t *testing.T) string {
	t.Helper()
	if path, err := exec.LookPath("grpcurl"); err == nil {
		return path
	}
	for _, dir := range filepath.SplitList(build.Default.GOPATH) {
		path := filepath.Join(dir, "bin", "grpcurl")
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("grpcurl is required in CI (.ci/run installs it with go install)")
	}
	t.Skip("grpcurl is not installed: go install it at the version .ci/run names")
	return ""
}

// grpcurlRun runs `grpcurl -plaintext FLAGS… ADDR VERB…` (gRPC without TLS: h2c) and returns
// its output and exit code (grpcurl exits 64 + the status code when the call fails).
func grpcurlRun(t *testing.T, bin string, flags []string, addr string, verb ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	args := append(append(append([]string{"-plaintext"}, flags...), addr), verb...)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
		return string(out), exitErr.ExitCode()
	}
	require.NoError(t, err, "grpcurl %q", args)
	return string(out), 0
}

// grpcurlClient calls a server at addr with grpcurl and an API key.
type grpcurlClient struct{ bin, addr, key string }

// call calls method with the key and a JSON request, which must succeed, and returns the
// decoded answer.
func (g grpcurlClient) call(t *testing.T, method, request string) map[string]any {
	t.Helper()
	flags := []string{"-H", "authorization: Bearer " + g.key, "-d", request}
	out, code := grpcurlRun(t, g.bin, flags, g.addr, method)
	require.Equal(t, 0, code, "grpcurl %s: %s", method, out)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), "grpcurl %s: %s", method, out)
	return res
}

// field is m's field named in either of protobuf's JSON spellings (lease_token, leaseToken).
func field(m map[string]any, name string) any {
	if v, ok := m[name]; ok {
		return v
	}
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return m[strings.Join(parts, "")]
}

// hopper serve is a plain gRPC server to grpcurl, which knows nothing of Hopper but what
// reflection tells it: it lists and describes the services, then enqueues, activates and
// completes a job over gRPC without TLS (h2c). A call without the key gets UNAUTHENTICATED as a
// gRPC status, while reflection needs none.
func TestGRPCurlDrivesTheServer(t *testing.T) {
	t.Parallel()
	bin := grpcurl(t)
	b := setup(t)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	res := b.run(t, "keys", "create", "--name", "grpcurl", "--scope", "admin", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var created struct{ Key string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	_, addr := startServe(t, "--database", b.db, "serve", "--no-echo")

	out, code := grpcurlRun(t, bin, nil, addr, "list")
	require.Equal(t, 0, code, out)
	for _, svc := range []string{"hopper.v1.JobService", "hopper.v1.WorkerService", "hopper.v1.AdminService",
		"grpc.reflection.v1.ServerReflection"} {
		require.Contains(t, out, svc+"\n", "grpcurl list")
	}
	out, code = grpcurlRun(t, bin, nil, addr, "describe", "hopper.v1.WorkerService.Activate")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "rpc Activate ( .hopper.v1.ActivateRequest ) returns ( .hopper.v1.ActivateResponse )")
	out, code = grpcurlRun(t, bin, nil, addr, "describe", "hopper.v1.CompleteRequest")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "int64 lease_token = 2;")
	// With api/'s comments, which reflection serves though the generated code has none.
	out, code = grpcurlRun(t, bin, nil, addr, "describe", "hopper.v1.JobService.Enqueue")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "// Enqueue stores one job.")
	out, code = grpcurlRun(t, bin, nil, addr, "describe", "hopper.v1.EnqueueResponse")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "  // existing is true when an idempotency key returned a job enqueued before.\n  bool existing = 2;")

	// Without the key: the status, as gRPC tools show it.
	enqueue := `{"job": {"kind": "grpcurl.test", "args": "{\"n\": 1}"}}`
	out, code = grpcurlRun(t, bin, []string{"-d", enqueue}, addr, "hopper.v1.JobService/Enqueue")
	require.Equal(t, 64+16, code, "exit 64 + UNAUTHENTICATED: %s", out)
	require.Contains(t, out, "Code: Unauthenticated")
	require.Contains(t, out, "an API key is required")

	g := grpcurlClient{bin: bin, addr: addr, key: created.Key}
	id := field(g.call(t, "hopper.v1.JobService/Enqueue", enqueue)["job"].(map[string]any), "id")
	require.NotEmpty(t, id)

	activated := g.call(t, "hopper.v1.WorkerService/Activate", `{"worker": "grpcurl", "kinds": ["grpcurl.test"]}`)
	jobs, _ := activated["jobs"].([]any)
	require.Len(t, jobs, 1, "%v", activated)
	job := jobs[0].(map[string]any)
	require.Equal(t, id, field(job, "id"))
	token := field(job, "lease_token")
	require.NotEmpty(t, token)

	complete, err := json.Marshal(map[string]any{"id": id, "lease_token": token, "result": `{"ok": true}`})
	require.NoError(t, err)
	require.Empty(t, g.call(t, "hopper.v1.WorkerService/Complete", string(complete)))

	got := g.call(t, "hopper.v1.JobService/Get", `{"id": "`+id.(string)+`"}`)
	require.Equal(t, "completed", field(got["job"].(map[string]any), "state"), "%v", got)
}
