package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// develVersion is the version of a binary built from a source tree rather than installed at a
// tagged version (`go install …@v1.2.3`), as the Go toolchain itself writes it.
const develVersion = "(devel)"

// versionJSON is what `hopper version --json` prints. Commit, its time and modified come from
// the version control system at build time and are left out when the build did not record
// them (go build -buildvcs=false, a build outside a checkout, go install of a module).
type versionJSON struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   *bool  `json:"modified,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

// buildVersion reads the version out of the build information bi (nil when the binary has
// none).
func buildVersion(bi *debug.BuildInfo) versionJSON {
	v := versionJSON{Version: develVersion, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			modified := s.Value == "true"
			v.Modified = &modified
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print hopper's version and the commit it was built from",
		Long: `version prints the module version hopper was built at ("(devel)" for a build from a
source tree), the version control commit, its time and whether the tree had uncommitted
changes (when the build recorded them), and the Go version and platform.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo() // nil when the binary has none
			return printVersion(cmd, buildVersion(bi))
		},
	}
	addJSONFlag(cmd)
	return cmd
}

func printVersion(cmd *cobra.Command, v versionJSON) error {
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), v)
	}
	commit := "unknown (not recorded in this build)"
	if v.Commit != "" {
		commit = v.Commit
		if v.CommitTime != "" {
			commit += " (" + v.CommitTime + ")"
		}
		if v.Modified != nil && *v.Modified {
			commit += ", with uncommitted changes"
		}
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "hopper %s\ncommit %s\n%s %s\n", v.Version, commit, v.Go, v.Platform)
	return err
}
