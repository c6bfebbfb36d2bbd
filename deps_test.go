package hopper_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The library's core stays free of what only the server, the CLI or a store needs: an
// application that embeds Hopper on one store links no other store's driver, no RPC stack, no
// CLI framework and no metrics library, and the dependency points from the server to the
// library, never back. Tracing uses the OpenTelemetry API only: the SDK and its exporters are
// the application's choice (hopper serve's, for the server).
func TestCorePackagesImportNoDriverNorServerStack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	forbidden := []string{
		"github.com/jackc/pgx",                         // the PostgreSQL driver
		"modernc.org/sqlite",                           // the SQLite driver
		"connectrpc.com/",                              // the RPC stack
		"google.golang.org/grpc",                       // likewise
		"github.com/spf13/cobra",                       // the CLI
		"github.com/prometheus/",                       // metrics
		"github.com/hopperjobs/hopper/internal/server", // the server
		"github.com/hopperjobs/hopper/internal/cli",    // the CLI commands
		"github.com/hopperjobs/hopper/gen/",            // the generated RPC code
		"go.opentelemetry.io/otel/sdk",                 // tracing: the API only, the application picks the SDK
		"go.opentelemetry.io/otel/exporters/",          // likewise
	}
	for _, pkg := range []string{".", "./hoppertype", "./internal/store", "./internal/engine", "./internal/jobtrace"} {
		requireNoDeps(t, pkg, forbidden)
	}
	// hopperprom is Prometheus for library users: Prometheus and the library, not the server.
	requireNoDeps(t, "./hopperprom", slices.DeleteFunc(slices.Clone(forbidden),
		func(f string) bool { return f == "github.com/prometheus/" }))
}

// The Go client of a server links the RPC stack and the library's types, never a database
// driver, the server, the CLI or metrics; it and the conversion layer it shares with the
// server reach the store and the engine only through the root package's types.
func TestServerClientImportsNoDriverNorServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	requireNoDeps(t, "./hopperclient", []string{
		"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/spf13/cobra", "github.com/prometheus/",
		"github.com/hopperjobs/hopper/internal/server", "github.com/hopperjobs/hopper/internal/cli",
		"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/",
	})
	internals := []string{"github.com/hopperjobs/hopper/internal/store", "github.com/hopperjobs/hopper/internal/engine"}
	requireNoImports(t, "./hopperclient", internals)
	requireNoImports(t, "./internal/apiview", append(internals, "connectrpc.com/"))
}

// The Go remote worker links the protocol, the claim loop and the handler's side of an
// attempt (internal/attempt), never a store, the engine or the hopper package's client that
// runs on one: a program that only works a server's jobs links no database layer. The
// conversions it shares with the server (internal/apiview) likewise.
func TestRemoteWorkerLinksNoStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"./remote", "./internal/apiview", "./internal/attempt", "./internal/workerapi", "./internal/claim"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "go list -deps %s: %s", pkg, out)
		for _, dep := range strings.Fields(string(out)) {
			require.NotEqual(t, "github.com/hopperjobs/hopper", dep, "%s imports the hopper package", pkg)
			for _, f := range []string{"github.com/hopperjobs/hopper/internal/store", "github.com/hopperjobs/hopper/internal/engine",
				"github.com/jackc/pgx", "modernc.org/sqlite"} {
				require.False(t, strings.HasPrefix(dep, f), "%s imports %s", pkg, dep)
			}
		}
	}
}

// requireNoImports fails when pkg itself (not its dependencies) imports a package whose path
// starts with one of forbidden.
func requireNoImports(t *testing.T, pkg string, forbidden []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).CombinedOutput()
	require.NoError(t, err, "go list %s: %s", pkg, out)
	for _, imp := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			require.False(t, strings.HasPrefix(imp, f), "%s imports %s", pkg, imp)
		}
	}
}

// requireNoDeps fails when pkg depends on a package whose path starts with one of forbidden.
func requireNoDeps(t *testing.T, pkg string, forbidden []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			require.False(t, strings.HasPrefix(dep, f), "%s imports %s", pkg, dep)
		}
	}
}

// Importing the library stays cheap: every module this go.mod requires is in the module graph
// of every program that imports Hopper, so browser, chaos and benchmark tooling is required by
// the modules that use it (e2e, bench/peers), never here. The go line names a minor release
// (1.N.0), the lowest the dependencies allow, so importers are not forced onto a patch
// release; the toolchain line names the exact one.
func TestModuleRequiresNoTestTooling(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	forbidden := []string{
		"github.com/chromedp/",          // the browser tests (e2e/dashboard)
		"github.com/Shopify/toxiproxy/", // the chaos suite (e2e/chaos)
		"github.com/rs/zerolog",         // toxiproxy's logger
		"github.com/riverqueue/",        // bench/peers
	}
	var goLine string
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "go" && len(fields) == 2 {
			goLine = fields[1]
		}
		for _, f := range forbidden {
			require.False(t, strings.HasPrefix(fields[0], f), "go.mod requires %s", fields[0])
		}
	}
	require.Regexp(t, regexp.MustCompile(`^1\.[0-9]+\.0$`), goLine, "go.mod's go line names a minor release")
}
