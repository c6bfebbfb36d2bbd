//go:build sdk

package sdk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// The TypeScript SDK installs from its package (npm pack) into a project outside the
// repository, as a user installs it from the registry, and the example's worker and enqueuer
// run from there against hopper serve.
func TestInstalledTypeScriptPackage(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm is needed")
		}
		t.Skip("npm is not installed")
	}
	root := repoRoot(t)
	packs := t.TempDir()
	run(t, filepath.Join(root, "clients/typescript"), nil, "npm", "pack", "--silent", "--pack-destination", packs)
	tarballs, err := filepath.Glob(filepath.Join(packs, "*.tgz"))
	require.NoError(t, err)
	require.Len(t, tarballs, 1)

	// A fresh project in the temporary directory, far from the repository's node_modules.
	project := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "package.json"),
		[]byte(`{"name": "installed-hopper", "private": true, "type": "module"}`), 0o644))
	run(t, project, nil, "npm", "install", "--no-audit", "--no-fund", "--silent", tarballs[0])
	for _, f := range []string{"worker.mjs", "enqueue.mjs"} {
		b, err := os.ReadFile(filepath.Join(root, "examples/node-worker", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(project, f), b, 0o644))
	}

	runExample(t, project, []string{"node", "enqueue.mjs"}, []string{"node", "worker.mjs"})
}

// runExample runs an example's enqueuer (3 jobs that succeed) and then its worker, from
// project, against a new hopper serve: every job completes, and the worker stops on SIGTERM.
func runExample(t *testing.T, project string, enqueuer, workerCmd []string) {
	s := startServer(t)
	env := []string{"HOPPER_URL=" + s.url()}
	args := append(enqueuer[1:], "--resize", "2", "--charge", "1", "--bad", "0", "--queue", "installed")
	out := run(t, project, env, enqueuer[0], args...)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3, out)

	worker := exec.Command(workerCmd[0], append(workerCmd[1:], "--queue", "installed")...)
	worker.Dir, worker.Env = project, append(os.Environ(), env...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "worker.log"))
	require.NoError(t, err)
	defer logf.Close()
	worker.Stdout, worker.Stderr = logf, logf
	worker.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, worker.Start())
	t.Cleanup(func() { _ = worker.Process.Kill() })

	api := apiOf(t, s.url(), "")
	list, err := api.List(ctx(t), &hopper.ListParams{Queues: []string{"installed"}})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 3)
	for _, j := range list.Jobs {
		var job *hopper.JobRow
		require.Eventually(t, func() bool {
			job, err = api.Get(ctx(t), j.ID)
			require.NoError(t, err)
			return job.State == hopper.StateCompleted
		}, 60*time.Second, 20*time.Millisecond, "job %s (%s) did not complete: %s", j.ID, j.Kind, readFile(logf.Name()))
		require.NotEmpty(t, job.Result)
	}
	require.NoError(t, worker.Process.Signal(syscall.SIGTERM))
	require.NoError(t, worker.Wait(), readFile(logf.Name()))
}

// The Python SDK installs from its wheel into a fresh virtual environment outside the
// repository, as a user installs it from the registry, and the example's worker and enqueuer
// run from there against hopper serve. The environment sees the system's grpcio and protobuf
// (Debian's, where the registry cannot be reached), so the wheel is installed without its
// dependencies.
func TestInstalledPythonPackage(t *testing.T) {
	py := python()
	if err := exec.Command(py, "-c", "import grpc, google.protobuf, pip, venv, wheel").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s lacks grpcio, protobuf, pip, venv or wheel: %v", py, err)
		}
		t.Skipf("%s lacks grpcio, protobuf, pip, venv or wheel: %v", py, err)
	}
	root := repoRoot(t)
	// The wheel is built from a copy: setuptools writes build/ and *.egg-info beside the sources.
	src := filepath.Join(t.TempDir(), "python")
	run(t, root, nil, "cp", "-r", filepath.Join(root, "clients/python"), src)
	wheels := t.TempDir()
	run(t, src, nil, py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", wheels, ".")
	built, err := filepath.Glob(filepath.Join(wheels, "*.whl"))
	require.NoError(t, err)
	require.Len(t, built, 1)
	venv := filepath.Join(t.TempDir(), "venv")
	run(t, root, nil, py, "-m", "venv", "--system-site-packages", "--without-pip", venv)
	vpy := filepath.Join(venv, "bin", "python")
	run(t, root, nil, vpy, "-m", "pip", "install", "--no-deps", "--no-index", "-q", built[0])

	project := t.TempDir()
	for _, f := range []string{"worker.py", "enqueue.py"} {
		b, err := os.ReadFile(filepath.Join(root, "examples/python-worker", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(project, f), b, 0o644))
	}
	where := run(t, project, nil, vpy, "-c", "import hopper; print(hopper.__file__)")
	require.True(t, strings.HasPrefix(where, venv), "hopper is imported from the environment: %s", where)
	runExample(t, project, []string{vpy, "enqueue.py"}, []string{vpy, "worker.py"})
}

// run runs a command in dir and returns its standard output; it fails the test when the
// command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s in %s: %s", name, strings.Join(args, " "), dir, stderr.String())
	return string(out)
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
