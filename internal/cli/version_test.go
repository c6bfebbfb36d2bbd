package cli

import (
	"encoding/json"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// `hopper version` prints this binary's build in three lines and as JSON; `hopper --version`
// prints the same three lines. (What a stamped build prints: cmd/hopper's TestStampedBuild.)
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "version")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, versionText(buildinfo.Read()), res.stdout)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 3, res.stdout)
	require.Regexp(t, `^hopper \S+`, lines[0])
	require.Regexp(t, `^commit \S+`, lines[1])
	require.Equal(t, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, lines[2])

	for _, flag := range []string{"--version", "-v"} {
		v := b.run(t, flag)
		require.Equal(t, ExitOK, v.code, v.stderr)
		require.Equal(t, res.stdout, v.stdout, flag)
	}

	res = b.run(t, "version", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &v))
	require.NotEmpty(t, v["version"])
	require.NotEmpty(t, v["commit"])
	require.Equal(t, runtime.Version(), v["go"])
	require.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, v["platform"])
	require.NotContains(t, v, "server")
}

func TestVersionText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "hopper v0.1.0\ncommit 0123abcd (2026-11-29T06:30:03Z), with uncommitted changes\ngo1.26.8 linux/arm64\n",
		versionText(buildinfo.Info{Version: "v0.1.0", Commit: "0123abcd", CommitTime: "2026-11-29T06:30:03Z", Modified: true,
			Go: "go1.26.8", Platform: "linux/arm64"}))
	require.Equal(t, "hopper (devel)\ncommit unknown (not recorded in this build)\ngo1.26.8 linux/amd64\n",
		versionText(buildinfo.Info{Version: buildinfo.Devel, Commit: buildinfo.Unknown, Go: "go1.26.8", Platform: "linux/amd64"}))
}

// With --server, `hopper version` also prints what the server says of itself
// (ServerService.Info), which needs no API key.
func TestVersionOfAServer(t *testing.T) {
	t.Parallel()
	build := buildinfo.Info{Version: "v9.8.7", Commit: "fedcba9876543210", CommitTime: "2026-11-29T06:30:03Z",
		Go: "go1.99.1", Platform: "plan9/arm"}
	b := startServer(t, true, func(c *server.Config) { c.Build = build })
	res := b.remote(t, "version") // no HOPPER_API_KEY, on a server that requires keys
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, versionText(buildinfo.Read())+"\nserver "+b.url+"\n"+
		"hopper v9.8.7\ncommit fedcba9876543210 (2026-11-29T06:30:03Z)\ngo1.99.1 plan9/arm\n"+
		"store sqlite, schema version "+strconv.Itoa(sqlite.LatestVersion())+"\n", res.stdout)

	res = b.remote(t, "version", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var v struct {
		Version string
		Server  map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &v))
	require.Equal(t, buildinfo.Read().Version, v.Version)
	require.Equal(t, map[string]any{"url": b.url, "version": "v9.8.7", "commit": "fedcba9876543210",
		"commit_time": "2026-11-29T06:30:03Z", "go": "go1.99.1", "platform": "plan9/arm", "store": "sqlite",
		"schema_version": float64(sqlite.LatestVersion())}, v.Server)
}

// A server that cannot be reached: this binary's version, then exit 6.
func TestVersionOfAServerThatIsAway(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	res := setup(t).run(t, "--server", "http://"+addr, "version")
	require.Equal(t, ExitUnavailable, res.code, res.stderr)
	require.Equal(t, versionText(buildinfo.Read()), res.stdout)
	require.Contains(t, res.stderr, "server unavailable")
}
