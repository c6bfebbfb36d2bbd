package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// healthcheckTimeout bounds one probe: a server that has not answered /livez by then counts as
// down. Docker and Kubernetes stop the probe at their own timeout too; this one ends it first,
// with a message.
const healthcheckTimeout = 5 * time.Second

type healthcheckOptions struct {
	addr    string
	tlsCert string
}

// newHealthcheckCmd is `hopper healthcheck`: a probe of a local server's /livez for images
// that have no shell or curl (the container image is FROM scratch). Its flags are serve's
// --addr and --tls-cert, and like serve's they come from HOPPER_ADDR and HOPPER_TLS_CERT, so in
// a container the probe follows the configuration the server was started with.
func newHealthcheckCmd() *cobra.Command {
	var o healthcheckOptions
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Probe a hopper serve on this machine: exit 0 when its /livez answers 200",
		Long: `healthcheck asks the server that 'hopper serve --addr ADDR' runs on this machine for
GET /livez and exits 0 when it answers 200 OK, 6 otherwise (not listening, not answering
within 5 s, or another status). It is the container image's HEALTHCHECK, which has no shell
or curl to do it.

--addr is serve's listen address; an address on every interface (0.0.0.0:7070, :7070, [::]:7070)
is probed on the loopback address. With --tls-cert (serve's certificate file) it probes over
HTTPS and accepts only that certificate, whatever names it holds. Both flags can come from
serve's variables, HOPPER_ADDR and HOPPER_TLS_CERT, so the probe follows the server's
configuration.`,
		Args:        cobra.NoArgs,
		RunE:        func(cmd *cobra.Command, _ []string) error { return healthcheck(cmd, o) },
		Annotations: map[string]string{envFlagsAll: envFlagsAll},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7070", "the server's listen address (serve --addr), HOST:PORT")
	f.StringVar(&o.tlsCert, "tls-cert", "", "the server's certificate file (serve --tls-cert): probe over HTTPS, trusting only it")
	return cmd
}

func healthcheck(cmd *cobra.Command, o healthcheckOptions) error {
	url, err := livezURL(o.addr, o.tlsCert != "")
	if err != nil {
		return err
	}
	tr := &http.Transport{DisableKeepAlives: true}
	if o.tlsCert != "" {
		if tr.TLSClientConfig, err = pinnedTLS(o.tlsCert); err != nil {
			return err
		}
	}
	hc := &http.Client{Transport: tr, Timeout: healthcheckTimeout}
	resp, err := hc.Get(url)
	if err != nil {
		cause := err
		var ue *neturl.Error
		if errors.As(err, &ue) {
			cause = ue.Err // without the method and URL, which the message names already
		}
		return &exitError{code: ExitUnavailable, msg: fmt.Sprintf("%s: %v", url, cause), err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: ExitUnavailable, msg: fmt.Sprintf("%s: %s", url, resp.Status)}
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", url, resp.Status)
	return err
}

// livezURL is the /livez URL of a server listening on addr; a wildcard host (none,
// 0.0.0.0, ::) is reached on the loopback address of its family.
func livezURL(addr string, https bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageErrorf("--addr %q: %v", addr, err)
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/livez", nil
}

// pinnedTLS is a client configuration that accepts exactly the certificate in certFile (its
// first PEM certificate, the server's own in serve's --tls-cert). The probe's host is the
// loopback address, which the certificate need not name, so names are not checked; the pin
// is stricter than a chain to a CA.
func pinnedTLS(certFile string) (*tls.Config, error) {
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		return nil, usageErrorf("--tls-cert: %v", err)
	}
	leaf, err := firstCertificate(pemBytes)
	if err != nil {
		return nil, usageErrorf("--tls-cert %s: %v", certFile, err)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by the pin below, which checks more than a chain would
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			if len(rawCerts) == 0 || !bytes.Equal(rawCerts[0], leaf.Raw) {
				return errors.New("the server's certificate is not the one in --tls-cert")
			}
			return nil
		},
	}, nil
}

// firstCertificate parses the first certificate of a PEM file.
func firstCertificate(pemBytes []byte) (*x509.Certificate, error) {
	for rest := pemBytes; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM certificate in the file")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}
