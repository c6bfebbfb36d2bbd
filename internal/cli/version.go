package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print hopper's version and the commit it was built from, and a server's with --server",
		Long: `version prints the version hopper was built at (the release a build stamped, the Go
module or pseudo-version, or "(devel)" when the build recorded none), the commit, its time and
whether the tree had uncommitted changes (or "unknown"), and the Go version and platform.
'hopper --version' prints the same.

With --server (or $HOPPER_SERVER) it then asks that server (ServerService.Info, which needs no
API key) and prints the same of the server's build, and its store and schema version.`,
		Args: cobra.NoArgs,
		RunE: runVersion,
	}
	addJSONFlag(cmd)
	return cmd
}

// versionJSON is what `hopper version --json` prints: this binary's build, and with --server
// the server's.
type versionJSON struct {
	buildinfo.Info
	Server *serverVersionJSON `json:"server,omitempty"`
}

// serverVersionJSON is a server's build in the shape of this binary's, with its store.
type serverVersionJSON struct {
	URL string `json:"url"`
	buildinfo.Info
	Store         string `json:"store,omitempty"`
	SchemaVersion int    `json:"schema_version"`
}

func runVersion(cmd *cobra.Command, _ []string) error {
	out := versionJSON{Info: buildinfo.Read()}
	url := serverURL(cmd)
	if !wantJSON(cmd) {
		if _, err := io.WriteString(cmd.OutOrStdout(), versionText(out.Info)); err != nil {
			return err
		}
	}
	if url != "" {
		c, err := newRemote(url)
		if err != nil {
			return err
		}
		si, err := c.ServerInfo(cmd.Context())
		if err != nil {
			return remoteErr(err)
		}
		out.Server = serverVersion(url, si)
	}
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), out)
	}
	if out.Server == nil {
		return nil
	}
	s := out.Server
	text := "\nserver " + s.URL + "\n" + versionText(s.Info)
	if s.Store != "" {
		text += fmt.Sprintf("store %s, schema version %d\n", s.Store, s.SchemaVersion)
	}
	_, err := io.WriteString(cmd.OutOrStdout(), text)
	return err
}

// serverVersion is what the server at url said of itself.
func serverVersion(url string, si *hoppertype.ServerInfo) *serverVersionJSON {
	in := buildinfo.Info{Version: si.Version, Commit: si.Commit, Modified: si.Modified, Go: si.GoVersion, Platform: si.Platform}
	if !si.CommitTime.IsZero() {
		in.CommitTime = si.CommitTime.UTC().Format(time.RFC3339)
	}
	return &serverVersionJSON{URL: url, Info: in, Store: si.Store, SchemaVersion: si.SchemaVersion}
}

// versionText is a build in three lines, as `hopper version` and `hopper --version` print it:
//
//	hopper v0.1.0
//	commit 0123abcd… (2026-11-29T06:30:03Z), with uncommitted changes
//	go1.26.8 linux/amd64
func versionText(in buildinfo.Info) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hopper %s\ncommit %s", in.Version, in.Commit)
	if in.Commit == buildinfo.Unknown {
		b.WriteString(" (not recorded in this build)")
	}
	if in.CommitTime != "" {
		fmt.Fprintf(&b, " (%s)", in.CommitTime)
	}
	if in.Modified {
		b.WriteString(", with uncommitted changes")
	}
	fmt.Fprintf(&b, "\n%s %s\n", in.Go, in.Platform)
	return b.String()
}
