package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// parsed is the command args name, its flags parsed from the command line as Execute would,
// before the environment is read.
func parsed(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	cmd, rest, err := newRootCmd().Find(args)
	require.NoError(t, err)
	cmd.InitDefaultHelpFlag()
	require.NoError(t, cmd.ParseFlags(rest))
	return cmd
}

// env is a fake environment.
type env map[string]string

func (e env) lookup(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	for flag, name := range map[string]string{"database": "HOPPER_DATABASE", "max-rescues": "HOPPER_MAX_RESCUES",
		"tls-cert": "HOPPER_TLS_CERT", "max-streams-per-key": "HOPPER_MAX_STREAMS_PER_KEY",
		"bootstrap-key-file": "HOPPER_BOOTSTRAP_KEY_FILE"} { // deploy/ and docs name it
		require.Equal(t, name, envName(flag))
	}
}

// Every flag of serve, and each global flag of every command, comes from its variable when the
// command line leaves it out; the command line wins.
func TestFlagsFromEnv(t *testing.T) {
	t.Parallel()
	cmd := parsed(t, "serve", "--addr", "127.0.0.1:9", "--no-echo=false")
	e := env{"HOPPER_ADDR": "0.0.0.0:1", "HOPPER_MAX_RESCUES": "7", "HOPPER_DATABASE": "/srv/hopper.db",
		"HOPPER_NO_ECHO": "true", "HOPPER_TLS_CERT": "c.pem", "HOPPER_SHUTDOWN_GRACE": "1m", "HOPPER_HELP": "true"}
	require.NoError(t, flagsFromEnv(cmd, e.lookup))
	f := cmd.Flags()
	for name, want := range map[string]string{"addr": "127.0.0.1:9", "no-echo": "false", "max-rescues": "7",
		"database": "/srv/hopper.db", "tls-cert": "c.pem", "shutdown-grace": "1m0s", "help": "false"} {
		require.Equal(t, want, f.Lookup(name).Value.String(), "--%s", name)
	}

	// Every flag of serve has a variable: its default, given there, is taken.
	cmd = parsed(t, "serve")
	defaults := env{}
	cmd.Flags().VisitAll(func(fl *pflag.Flag) { defaults[envName(fl.Name)] = fl.DefValue })
	require.NoError(t, flagsFromEnv(cmd, defaults.lookup))
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		require.Equal(t, fl.Name != "help", fl.Changed, "--%s from %s", fl.Name, envName(fl.Name))
	})

	// Another command takes the global flags only.
	cmd = parsed(t, "jobs", "ls")
	require.NoError(t, flagsFromEnv(cmd, env{"HOPPER_DATABASE": "/srv/hopper.db", "HOPPER_SERVER": "http://h:7070",
		"HOPPER_SCHEMA": "jobs", "HOPPER_LIMIT": "oops", "HOPPER_JSON": "true"}.lookup))
	require.Equal(t, "/srv/hopper.db", cmd.Flags().Lookup("database").Value.String())
	require.Equal(t, "http://h:7070", serverURL(cmd))
	require.Equal(t, "jobs", cmd.Flags().Lookup("schema").Value.String())
	require.False(t, wantJSON(cmd), "only serve's own flags come from the environment")
}

func TestABadEnvValueNamesTheVariable(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{"HOPPER_MAX_RESCUES": "lots", "HOPPER_SHUTDOWN_GRACE": "soon",
		"HOPPER_NO_ECHO": ""} {
		err := flagsFromEnv(parsed(t, "serve"), env{name: value}.lookup)
		require.Error(t, err, name)
		require.Equal(t, ExitUsage, exitCode(err))
		flag := "--" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, envPrefix)), "_", "-")
		require.Contains(t, message(err), name+": ", name)
		require.Contains(t, message(err), flag, name)
	}
}

// The process's environment, through the hopper command: a command reads HOPPER_DATABASE,
// serve refuses a bad variable before it starts. (t.Setenv: not parallel.)
func TestCommandsReadTheEnvironment(t *testing.T) {
	b := setup(t)
	id := b.enqueue(t, "from-env")
	t.Setenv("HOPPER_DATABASE", b.db)
	res := runArgs(t, "jobs", "show", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "from-env")

	t.Setenv("HOPPER_SERVER", "localhost:7070")
	res = runArgs(t, "jobs", "ls")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, `invalid HOPPER_SERVER: "localhost:7070" has no scheme`, "names the variable")
	t.Setenv("HOPPER_SERVER", "")

	t.Setenv("HOPPER_MAX_RESCUES", "lots")
	res = runArgs(t, "serve", "--addr", "127.0.0.1:0")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "HOPPER_MAX_RESCUES: ")

	// serve from the environment (its database too), the flag on the command line winning.
	t.Setenv("HOPPER_MAX_RESCUES", "2")
	t.Setenv("HOPPER_ADDR", "256.0.0.1:1")
	_, addr := startServe(t, "serve", "--addr", "127.0.0.1:0")
	resp, err := http.Get("http://" + addr + "/v1/jobs/" + id)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the server has HOPPER_DATABASE's job")
}

// runArgs runs hopper with args alone.
func runArgs(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}
