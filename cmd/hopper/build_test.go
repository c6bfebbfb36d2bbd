package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// stamp is what TestStampedBuild stamps, as `make build` and .goreleaser.yaml do.
const (
	stampVersion    = "v1.2.3-test"
	stampCommit     = "0123456789abcdef0123456789abcdef01234567"
	stampCommitTime = "2026-11-29T06:30:03Z"
	buildinfoPkg    = "github.com/hopperjobs/hopper/internal/buildinfo"
)

// build builds this command into dir/name with -buildvcs=false (the toolchain then records
// no commit, as on a machine without git or in a release's clean build) and the given
// -ldflags.
func build(t *testing.T, dir, name, ldflags string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	msg, err := exec.Command("go", "build", "-buildvcs=false", "-ldflags", ldflags, "-o", out, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", msg)
	return out
}

// hopper runs bin with args and returns its standard output; it must exit 0.
func hopper(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "hopper %v: %s", args, stderr.String())
	return stdout.String()
}

// A build stamped with -ldflags -X says the stamped version and commit in `hopper version`,
// `hopper --version` and, served, on /readyz and through ServerService.Info (`hopper version
// --server`); an unstamped -buildvcs=false build says "(devel)" and "unknown" without failing.
func TestStampedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hopper binary twice")
	}
	t.Parallel()
	dir := t.TempDir()
	stamped := build(t, dir, "hopper-stamped", "-s -w -X "+buildinfoPkg+".version="+stampVersion+
		" -X "+buildinfoPkg+".commit="+stampCommit+" -X "+buildinfoPkg+".commitTime="+stampCommitTime)
	plain := build(t, dir, "hopper-plain", "")
	platform := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH

	want := "hopper " + stampVersion + "\ncommit " + stampCommit + " (" + stampCommitTime + ")\n" + platform + "\n"
	require.Equal(t, want, hopper(t, stamped, "version"))
	require.Equal(t, want, hopper(t, stamped, "--version"))
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(hopper(t, stamped, "version", "--json")), &v))
	require.Equal(t, map[string]any{"version": stampVersion, "commit": stampCommit, "commit_time": stampCommitTime,
		"go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}, v)

	devel := "hopper (devel)\ncommit unknown (not recorded in this build)\n" + platform + "\n"
	require.Equal(t, devel, hopper(t, plain, "version"))
	require.Equal(t, devel, hopper(t, plain, "--version"))

	addr := serve(t, stamped, filepath.Join(dir, "hopper.db"))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/readyz", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ready map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ready))
	require.Equal(t, map[string]any{"ready": true, "status": "ok", "failing": []any{}, "version": stampVersion,
		"commit": stampCommit, "store": "sqlite", "schema_version": float64(sqlite.LatestVersion())}, ready)

	// The unstamped client asks the stamped server.
	require.Equal(t, devel+"\nserver http://"+addr+"\n"+want+"store sqlite, schema version "+
		strconv.Itoa(sqlite.LatestVersion())+"\n", hopper(t, plain, "--server", "http://"+addr, "version"))
}

// servingOn is the line `hopper serve` prints once it listens.
var servingOn = regexp.MustCompile(`hopper serving on http://(\S+) `)

// serve starts bin's `hopper serve` on db and a port of its choosing, and returns the address
// once it listens. It is stopped with SIGTERM, and must exit 0, at cleanup.
func serve(t *testing.T, bin, db string) string {
	t.Helper()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd := exec.Command(bin, "serve", "--database", db, "--addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		select {
		case err := <-exited:
			require.NoError(t, err, "hopper serve: %s", stderr.String())
		case <-time.After(20 * time.Second):
			require.NoError(t, cmd.Process.Kill())
			t.Errorf("hopper serve did not stop within 20 s: %s", stderr.String())
		}
	})
	var m []string
	require.Eventually(t, func() bool {
		m = servingOn.FindStringSubmatch(stdout.String())
		return m != nil
	}, 20*time.Second, 10*time.Millisecond, "hopper serve did not start: %s", stderr.String())
	return m[1]
}

// syncBuffer is an output written by a running process and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
