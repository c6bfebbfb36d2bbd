package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// vcs is what the toolchain records for a build in a clone with a file edited.
var vcs = &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261101100000-0123abcd0123+dirty"},
	Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"},
		{Key: "vcs.time", Value: "2026-11-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}

func TestNothingRecordedIsDevelAndUnknown(t *testing.T) {
	t.Parallel()
	want := Info{Version: Devel, Commit: Unknown, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	require.Equal(t, want, resolve(stamp{}, nil))
	// go build -buildvcs=false in a source tree: build information without a version or vcs.
	require.Equal(t, want, resolve(stamp{}, &debug.BuildInfo{Main: debug.Module{Version: Devel}}))
	require.Equal(t, want, resolve(stamp{}, &debug.BuildInfo{}))
}

func TestTheToolchainsRecordWithoutAStamp(t *testing.T) {
	t.Parallel()
	require.Equal(t, Info{Version: "v0.0.0-20261101100000-0123abcd0123+dirty", Commit: "0123abcd",
		CommitTime: "2026-11-01T10:00:00Z", Modified: true, Go: "go1.26.8", Platform: runtime.GOOS + "/" + runtime.GOARCH},
		resolve(stamp{}, vcs))
	// go install github.com/hopperjobs/hopper/cmd/hopper@v1.4.0: a module version, no vcs.
	in := resolve(stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}})
	require.Equal(t, "v1.4.0", in.Version)
	require.Equal(t, Unknown, in.Commit)
}

// What the linker stamps wins; with -buildvcs=false it is all there is.
func TestAStampWins(t *testing.T) {
	t.Parallel()
	s := stamp{version: "v0.1.0", commit: "fedcba98", commitTime: "2026-11-29T06:30:03Z"}
	in := resolve(s, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: Devel}})
	require.Equal(t, Info{Version: "v0.1.0", Commit: "fedcba98", CommitTime: "2026-11-29T06:30:03Z",
		Go: "go1.26.8", Platform: runtime.GOOS + "/" + runtime.GOARCH}, in)

	s.modified = true
	require.True(t, resolve(s, nil).Modified)

	// Over the toolchain's record of the same commit: its modified flag stays.
	in = resolve(stamp{version: "v0.1.0", commit: "0123abcd"}, vcs)
	require.Equal(t, "v0.1.0", in.Version)
	require.Equal(t, "2026-11-01T10:00:00Z", in.CommitTime)
	require.True(t, in.Modified)
	// Over another commit's: none of the toolchain's commit facts.
	in = resolve(stamp{commit: "fedcba98"}, vcs)
	require.Equal(t, "fedcba98", in.Commit)
	require.Empty(t, in.CommitTime)
	require.False(t, in.Modified)
	require.Equal(t, vcs.Main.Version, in.Version, "the version was not stamped")
}
