package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/stretchr/testify/require"
)

// syncBuffer is an output written by a running command and read by the test.
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

// servingOn is the line `hopper serve` prints once it listens.
var servingOn = regexp.MustCompile(`hopper serving on (https?)://(\S+) `)

// startServe runs `hopper serve` in-process, on a port of its own choosing unless args name
// an --addr, with args (global flags and serve's), and returns the address it listens on
// once it does. The server is stopped, and must exit 0, at cleanup.
func startServe(t *testing.T, args ...string) (scheme, addr string) {
	t.Helper()
	if !strings.Contains(strings.Join(args, " "), "--addr") && os.Getenv("HOPPER_ADDR") == "" {
		args = append(args, "--addr", "127.0.0.1:0")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), stdout, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			require.Equal(t, ExitOK, code, "hopper serve: %s", stderr.String())
		case <-time.After(20 * time.Second):
			t.Error("hopper serve did not stop within 20 s")
		}
	})
	var m []string
	require.Eventually(t, func() bool {
		select {
		case code := <-done:
			done <- code
			return true
		default:
		}
		m = servingOn.FindStringSubmatch(stdout.String())
		return m != nil
	}, 15*time.Second, 5*time.Millisecond)
	require.NotNil(t, m, "hopper serve %q did not start: %s", args, stderr.String())
	return m[1], m[2]
}

// selfSigned writes a new self-signed certificate for 127.0.0.1 and localhost and its key
// into dir, as PEM files, and returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "hopper test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// With --tls-cert and --tls-key, serve speaks HTTPS, and HTTP/2 through ALPN, so gRPC works
// over TLS; plaintext requests get nowhere.
func TestServeOverTLS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	scheme, addr := startServe(t, "--database", b.db, "serve", "--tls-cert", certFile, "--tls-key", keyFile)
	require.Equal(t, "https", scheme)
	base := "https://" + addr
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	t.Cleanup(hc.CloseIdleConnections)

	resp, err := hc.Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, resp.ProtoMajor, "HTTP/2 negotiated by ALPN")

	jobs := hopperv1connect.NewJobServiceClient(connect.NewClient(connecthttp.NewTransport(hc, base, connecthttp.WithGRPC())))
	enq, err := jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: EchoKind, Args: `{"over":"tls"}`}})
	require.NoError(t, err, "gRPC over TLS")
	require.Eventually(t, func() bool {
		got, err := jobs.Get(t.Context(), &hopperv1.GetRequest{Id: enq.GetJob().GetId()})
		require.NoError(t, err)
		return got.GetJob().GetState() == "completed"
	}, 10*time.Second, 10*time.Millisecond, "the server's echo worker ran it")

	plain := &http.Client{Timeout: 5 * time.Second}
	resp, err = plain.Get("http://" + addr + "/healthz")
	if err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP to the TLS port")
	}
}

// --tls-cert and --tls-key go together, and a pair that does not load is refused at start,
// naming the flags.
func TestServeRefusesHalfATLSConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certFile}, "--tls-cert needs --tls-key"},
		{[]string{"--tls-key", keyFile}, "--tls-key needs --tls-cert"},
		{[]string{"--tls-cert", keyFile, "--tls-key", certFile}, "--tls-cert " + keyFile + " and --tls-key " + certFile},
		{[]string{"--tls-cert", filepath.Join(t.TempDir(), "none.pem"), "--tls-key", keyFile}, "no such file"},
	} {
		res := b.run(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, c.args...)...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", c.args, res.stderr)
		require.Contains(t, res.stderr, c.want, "%v", c.args)
	}
}
