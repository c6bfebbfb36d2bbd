// Package buildinfo is what a hopper binary knows of its own build: the version, commit and
// commit time a release stamps into it with the linker, or else what the Go toolchain
// recorded (runtime/debug.ReadBuildInfo). `hopper version`, `hopper --version`, `/readyz` and
// ServerService.Info all read it here.
//
// `make build` and the release configuration (.goreleaser.yaml) stamp it:
//
//	go build -ldflags "-X github.com/hopperjobs/hopper/internal/buildinfo.version=v0.1.0
//	  -X github.com/hopperjobs/hopper/internal/buildinfo.commit=$(git rev-parse HEAD)
//	  -X github.com/hopperjobs/hopper/internal/buildinfo.commitTime=$(git log -1 --format=%cI)" ./cmd/hopper
//
// A value stamped empty counts as not stamped. Without stamps, a build with version control
// information (go build in a clone, unless -buildvcs=false) reports the toolchain's
// pseudo-version and revision, and `go install …@v1.2.3` the module version; a build with
// neither says Devel and Unknown.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// What the linker stamps (-ldflags -X); see the package comment. modified is "true" when the
// tree had uncommitted changes (make build sets it).
var (
	version    string
	commit     string
	commitTime string
	modified   string
)

const (
	// Devel is the version of a binary that says none: built from a source tree without a
	// stamp or a module version, as the Go toolchain itself writes it.
	Devel = "(devel)"
	// Unknown is the commit of a binary that recorded none.
	Unknown = "unknown"
)

// Info describes a build.
type Info struct {
	// Version is the release ("v0.1.0"), the toolchain's module or pseudo-version, or Devel.
	Version string `json:"version"`
	// Commit is the full revision the binary was built from, or Unknown.
	Commit string `json:"commit"`
	// CommitTime is the commit's time (RFC 3339), "" when not recorded.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified: the tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go is the Go release that built the binary ("go1.26.8").
	Go string `json:"go"`
	// Platform is the binary's GOOS/GOARCH ("linux/amd64").
	Platform string `json:"platform"`
}

// Read returns this binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return resolve(stamp{version: version, commit: commit, commitTime: commitTime, modified: modified == "true"}, bi)
}

// stamp is what the linker set.
type stamp struct {
	version, commit, commitTime string
	modified                    bool
}

// resolve lays the stamped values over what the toolchain recorded in bi (nil for none).
func resolve(s stamp, bi *debug.BuildInfo) Info {
	in := Info{Version: Devel, Commit: Unknown, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var vcsModified bool
	if bi != nil {
		if bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			in.Go = bi.GoVersion
		}
		for _, st := range bi.Settings {
			switch st.Key {
			case "vcs.revision":
				in.Commit = st.Value
			case "vcs.time":
				in.CommitTime = st.Value
			case "vcs.modified":
				vcsModified = st.Value == "true"
			}
		}
	}
	// The toolchain's modified flag belongs to its revision: a stamped commit that is another
	// one (which a build cannot well have, but a hand-set -X can) takes only the stamp's.
	in.Modified = s.modified || (vcsModified && (s.commit == "" || s.commit == in.Commit))
	if s.version != "" {
		in.Version = s.version
	}
	if s.commit != "" {
		if s.commit != in.Commit {
			in.CommitTime = ""
		}
		in.Commit = s.commit
	}
	if s.commitTime != "" {
		in.CommitTime = s.commitTime
	}
	return in
}
