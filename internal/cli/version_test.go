package cli

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	v := buildVersion(nil)
	require.Equal(t, develVersion, v.Version)
	require.Empty(t, v.Commit)
	require.Nil(t, v.Modified)

	v = buildVersion(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"},
		{Key: "vcs.time", Value: "2026-11-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}})
	require.Equal(t, "v1.4.0", v.Version)
	require.Equal(t, "0123abcd", v.Commit)
	require.Equal(t, "2026-11-01T10:00:00Z", v.CommitTime)
	require.NotNil(t, v.Modified)
	require.True(t, *v.Modified)
	require.Equal(t, "go1.26.8", v.Go)

	v = buildVersion(&debug.BuildInfo{Main: debug.Module{Version: ""}})
	require.Equal(t, develVersion, v.Version, "a build from a source tree")
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "version")
	require.Equal(t, ExitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 3, res.stdout)
	require.Regexp(t, `^hopper \S+`, lines[0])
	require.Regexp(t, `^commit \S+`, lines[1])
	require.Equal(t, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, lines[2])

	res = b.run(t, "version", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &v))
	require.NotEmpty(t, v["version"])
	require.Equal(t, runtime.Version(), v["go"])
	require.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, v["platform"])
}
