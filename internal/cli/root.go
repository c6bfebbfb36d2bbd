// Package cli implements the hopper command: the server (serve), and the operator's commands
// on a Hopper database or through a running server. cmd/hopper calls Execute.
package cli

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/spf13/cobra"
)

// Execute runs the hopper command with the process's arguments and returns its exit code.
// Ctrl-C cancels the command's context.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// run executes the command tree with args and returns the exit code; errors are printed to
// stderr. Tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Cobra's own errors (unknown command or flag, wrong number of arguments) are not typed;
	// they are the ones returned before a command's RunE starts, so note when one starts.
	ran := false
	markRun(root, &ran)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitUsage
	if ran {
		code = exitCode(err)
	}
	cmd.PrintErrln("hopper:", message(err))
	if !ran {
		cmd.PrintErrf("Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

func markRun(cmd *cobra.Command, ran *bool) {
	if runE := cmd.RunE; runE != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			*ran = true
			return runE(cmd, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markRun(sub, ran)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "hopper",
		Short: "Run Hopper's server and operate its jobs, queues, schedules, workflows and dead letters",
		// Long names every command, in parentheses (TestRootHelpNamesEveryCommand).
		Long: `hopper runs the Hopper server (serve) and works on a Hopper database, a SQLite file or a
PostgreSQL schema (--database), or through a running server (--server): it creates the
database or applies its migrations (migrate), enqueues jobs (enqueue), lists, shows, cancels
and resumes them (jobs), lists, pauses, weighs, caps and rate-limits queues (queues) and job
kinds (kinds), manages recurring schedules (schedules), enqueues, lists, shows and cancels
workflows (workflows), lists, counts and replays dead letters (dlq), shows the worker nodes
and a server's remote workers (workers), manages API keys (keys), copies a SQLite database
while it is in use (backup), probes a server on this machine (healthcheck), measures
throughput and latency (bench) and prints the version it was built at (version).

The global flags --database, --schema and --server can also be set with the environment
variables HOPPER_DATABASE, HOPPER_SCHEMA and HOPPER_SERVER (every flag of 'hopper serve' has
one too: HOPPER_ and the flag's name in upper case, "-" as "_"); a flag given on the command
line wins.

Exit codes: 0 ok, 1 internal error, 2 bad input, 3 not found, 4 conflict (e.g. the job
already ended), 5 the server refused the API key, 6 the server is unreachable.`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: applyEnvFlags,
		// --version prints what `hopper version` prints of this binary (version.go).
		Version: versionText(buildinfo.Read()),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.PersistentFlags().String(flagDatabase, "./hopper.db", "SQLite database file, or a postgres:// URL")
	root.PersistentFlags().String(flagSchema, "hopper", "PostgreSQL schema holding Hopper's tables")
	root.PersistentFlags().String(flagServer, "", "work through a running server at this URL instead of --database "+
		"(the API key comes from $"+envAPIKey+")")
	root.AddCommand(newMigrateCmd(), newEnqueueCmd(), newJobsCmd())
	root.AddCommand(newBackupCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newKeysCmd())
	root.AddCommand(newServeCmd(), newQueuesCmd(), newKindsCmd(), newWorkersCmd())
	root.AddCommand(newDLQCmd())
	root.AddCommand(newSchedulesCmd())
	root.AddCommand(newWorkflowsCmd())
	root.AddCommand(newVersionCmd())
	root.AddCommand(newHealthcheckCmd())
	documentEnvFlags(root)
	return root
}
