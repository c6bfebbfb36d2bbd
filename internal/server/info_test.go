package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/hopperjobs/hopper/remote"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// readiness is /readyz's JSON answer.
type readiness struct {
	Ready         bool     `json:"ready"`
	Status        string   `json:"status"`
	Failing       []string `json:"failing"`
	Version       string   `json:"version"`
	Commit        string   `json:"commit"`
	Store         string   `json:"store"`
	SchemaVersion int      `json:"schema_version"`
}

// readyJSON asks /readyz for JSON and requires status code want.
func readyJSON(t *testing.T, url string, want int) readiness {
	t.Helper()
	resp, body := get(t, url+"/readyz", "Accept", "text/html;q=0.9, application/json")
	require.Equal(t, want, resp.StatusCode, body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var rd readiness
	require.NoError(t, json.Unmarshal([]byte(body), &rd), body)
	require.NotNil(t, rd.Failing, "failing is a list, empty when nothing fails: %s", body)
	return rd
}

// stamped is a build as a release stamps it.
var stamped = buildinfo.Info{Version: "v0.4.2", Commit: "0123456789abcdef0123456789abcdef01234567",
	CommitTime: "2026-11-29T06:30:03Z", Go: "go1.26.8", Platform: "linux/arm64"}

// ServerService.Info and /readyz report the server's build and its store's kind and schema
// version, to anyone: without a key, and with a bad one, on a server that requires keys.
func TestServerInfoReportsTheBuildToAnyone(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) {
		c.Auth, c.Keys, c.Build = &server.KeyAuth{Keys: st}, st, stamped
	})
	want := &hopperv1.ServerInfo{Version: "v0.4.2", Commit: stamped.Commit,
		CommitTime: timestamppb.New(time.Date(2026, 11, 29, 6, 30, 3, 0, time.UTC)), GoVersion: "go1.26.8",
		Platform: "linux/arm64", Store: "sqlite", SchemaVersion: int32(sqlite.LatestVersion())}

	for _, opts := range [][]connect.ClientInterceptor{nil, {remote.Bearer("hop_x")}} {
		c := hopperv1connect.NewServerServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL), opts...))
		res, err := c.Info(t.Context(), &hopperv1.ServerServiceInfoRequest{})
		require.NoError(t, err)
		got := proto.CloneOf(res.GetServer())
		l := got.GetInputLimits()
		got.InputLimits = nil
		require.True(t, proto.Equal(want, got), "%v", got)
		// The limits workers respect, served rather than copied (TestEveryLimitIsServed holds
		// that each is served).
		require.Equal(t, int32(field.MaxErrorBytes), l.GetMaxErrorBytes())
		require.Equal(t, int32(field.MaxProgressMessageBytes), l.GetMaxProgressMessageBytes())
		require.Equal(t, int32(field.MaxErrorCodeLen), l.GetMaxErrorCodeLen())
		require.Equal(t, int32(hopper.MaxArgsBytes), l.GetMaxArgsBytes())
		require.Equal(t, int32(workerapi.MaxStreamCredit), l.GetMaxStreamCredit())
		require.Equal(t, field.MaxRunAtFuture, l.GetMaxRunAtFuture().AsDuration())
	}
	// Another method of the service is unimplemented, as in every service of the API.
	resp, _ := post(t, s.ts.URL+"/hopper.v1.ServerService/NoSuchMethod", `{}`)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a service's catch-all needs the read scope")

	// The JSON of the API: what curl sees.
	resp, body := post(t, s.ts.URL+"/hopper.v1.ServerService/Info", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var parsed map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &parsed))
	require.EqualValues(t, 65536, parsed["server"]["inputLimits"].(map[string]any)["maxErrorBytes"])
	delete(parsed["server"], "inputLimits")
	stripped, err := json.Marshal(parsed)
	require.NoError(t, err)
	body = string(stripped)
	require.JSONEq(t, `{"server":{"version":"v0.4.2","commit":"`+stamped.Commit+`","commitTime":"2026-11-29T06:30:03Z",
		"goVersion":"go1.26.8","platform":"linux/arm64","store":"sqlite","schemaVersion":`+
		jsonInt(sqlite.LatestVersion())+`}}`, body)

	rd := readyJSON(t, s.ts.URL, http.StatusOK)
	require.Equal(t, readiness{Ready: true, Status: "ok", Failing: []string{}, Version: "v0.4.2", Commit: stamped.Commit,
		Store: "sqlite", SchemaVersion: sqlite.LatestVersion()}, rd)
}

// Without Config.Build, the server reports this binary's build.
func TestServerInfoDefaultsToThisBinary(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, nil)
	c := hopperv1connect.NewServerServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL)))
	res, err := c.Info(t.Context(), &hopperv1.ServerServiceInfoRequest{})
	require.NoError(t, err)
	own := buildinfo.Read()
	require.Equal(t, own.Version, res.GetServer().GetVersion())
	require.Equal(t, own.Commit, res.GetServer().GetCommit())
	require.Equal(t, own.Go, res.GetServer().GetGoVersion())
	require.Equal(t, own.Version, readyJSON(t, s.ts.URL, http.StatusOK).Version)
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
