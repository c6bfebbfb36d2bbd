package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// healthcheck against a real hopper serve: live on its address and on the wildcard address of
// the same port (the container's HOPPER_ADDR=0.0.0.0:7070).
func TestHealthcheckProbesServe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, addr := startServe(t, "--database", b.db, "serve", "--no-echo")
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, a := range []string{addr, "0.0.0.0:" + port, ":" + port} {
		res := b.run(t, "healthcheck", "--addr", a)
		require.Equal(t, ExitOK, res.code, "--addr %s: %s", a, res.stderr)
		require.Equal(t, "http://127.0.0.1:"+port+"/livez: 200 OK\n", res.stdout)
	}
}

// Over TLS the probe accepts the server's own certificate only: without --tls-cert (plain HTTP
// to an HTTPS server) or with another certificate it fails.
func TestHealthcheckOverTLS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	_, addr := startServe(t, "--database", b.db, "serve", "--no-echo", "--tls-cert", certFile, "--tls-key", keyFile)

	res := b.run(t, "healthcheck", "--addr", addr, "--tls-cert", certFile)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "https://"+addr+"/livez: 200 OK\n", res.stdout)

	res = b.run(t, "healthcheck", "--addr", addr)
	require.Equal(t, ExitUnavailable, res.code, res.stdout)
	require.Contains(t, res.stderr, "http://"+addr+"/livez: 400 Bad Request")

	otherCert, _, _ := selfSigned(t, t.TempDir())
	res = b.run(t, "healthcheck", "--addr", addr, "--tls-cert", otherCert)
	require.Equal(t, ExitUnavailable, res.code, res.stdout)
	require.Contains(t, res.stderr, "not the one in --tls-cert")

	res = b.run(t, "healthcheck", "--addr", addr, "--tls-cert", filepath.Join(t.TempDir(), "missing.pem"))
	require.Equal(t, ExitUsage, res.code, res.stdout)
	require.Contains(t, res.stderr, "--tls-cert")
	res = b.run(t, "healthcheck", "--addr", addr, "--tls-cert", keyFile)
	require.Equal(t, ExitUsage, res.code, res.stdout)
	require.Contains(t, res.stderr, "no PEM certificate")
}

// Nothing listening, or something else answering /livez with another status, is not live.
func TestHealthcheckFailsWhenNotLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	res := b.run(t, "healthcheck", "--addr", closed)
	require.Equal(t, ExitUnavailable, res.code, res.stdout)
	require.Regexp(t, `^hopper: http://`+closed+`/livez: dial tcp \S+: connect: connection refused\n$`, res.stderr)

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	res = b.run(t, "healthcheck", "--addr", strings.TrimPrefix(down.URL, "http://"))
	require.Equal(t, ExitUnavailable, res.code, res.stdout)
	require.Contains(t, res.stderr, "/livez: 503 Service Unavailable")
}

func TestLivezURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:7070": "http://127.0.0.1:7070/livez",
		"0.0.0.0:7070":   "http://127.0.0.1:7070/livez",
		":8080":          "http://127.0.0.1:8080/livez",
		"[::]:7070":      "http://[::1]:7070/livez",
		"localhost:7070": "http://localhost:7070/livez",
		"10.1.2.3:7070":  "http://10.1.2.3:7070/livez",
	} {
		got, err := livezURL(addr, false)
		require.NoError(t, err, addr)
		require.Equal(t, want, got, addr)
	}
	got, err := livezURL("0.0.0.0:7443", true)
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:7443/livez", got)

	_, err = livezURL("7070", false)
	require.Equal(t, ExitUsage, exitCode(err))
	require.Contains(t, message(err), `--addr "7070"`)
}

// healthcheck reads serve's variables, so in a container it probes what serve was told.
func TestHealthcheckReadsServesVariables(t *testing.T) {
	t.Parallel()
	cmd := parsed(t, "healthcheck")
	require.NoError(t, flagsFromEnv(cmd, env{"HOPPER_ADDR": "0.0.0.0:9090", "HOPPER_TLS_CERT": "/etc/hopper/tls.crt"}.lookup))
	require.Equal(t, "0.0.0.0:9090", cmd.Flags().Lookup("addr").Value.String())
	require.Equal(t, "/etc/hopper/tls.crt", cmd.Flags().Lookup("tls-cert").Value.String())
}
