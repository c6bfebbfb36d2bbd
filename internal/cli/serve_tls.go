package cli

import (
	"crypto/tls"
	"log/slog"
	"net/http"

	"github.com/hopperjobs/hopper/internal/server"
	"github.com/spf13/cobra"
)

// addTLSFlags adds serve's --tls-cert and --tls-key.
func addTLSFlags(cmd *cobra.Command, o *serveOptions) {
	f := cmd.Flags()
	f.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS (and gRPC over TLS) with this PEM certificate file (chain first to last); needs --tls-key")
	f.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
}

// loadTLS loads the key pair of --tls-cert and --tls-key, both or neither; it returns nil for
// neither (plaintext). The files are read once, at start: a renewed certificate takes a
// restart. A missing flag or a pair that does not load is a usage error naming the flags.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case keyFile == "":
		return nil, usageErrorf("--tls-cert needs --tls-key, the certificate's private key")
	case certFile == "":
		return nil, usageErrorf("--tls-key needs --tls-cert, the certificate")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usageErrorf("--tls-cert %s and --tls-key %s: %v", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// newHTTPServer is the HTTP server of srv. It speaks HTTP/1.1 and HTTP/2, which gRPC needs:
// over TLS (tlsCfg set) HTTP/2 is chosen by ALPN; in plaintext it is h2c with prior knowledge,
// as gRPC clients without TLS (grpcurl -plaintext) speak it. Its own errors (a failed TLS
// handshake, a connection it could not serve) go to log.
func newHTTPServer(o serveOptions, srv *server.Server, tlsCfg *tls.Config, log *slog.Logger) *http.Server {
	return &http.Server{Handler: srv, ReadHeaderTimeout: o.readHeaderWait, Protocols: server.Protocols(), TLSConfig: tlsCfg,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}
