//go:build chaos

package chaos

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// full selects the full variant of every scenario (make chaos); without it each runs its short
// variant (make chaos-short, what CI runs).
var full = flag.Bool("full", false, "run the full variant of every scenario instead of the short one")

// keep keeps each scenario's logs (servers', workers') in a directory under $TMPDIR instead
// of t.TempDir, for a look after the run.
var keep = flag.Bool("keep", false, "keep the scenarios' log directories")

// bins are the programs under test, built once by TestMain.
var bins struct{ hopper, worker string }

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "hopper-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
	} else {
		code = m.Run()
		printTable(os.Stdout)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles the hopper command and the chaos worker into dir, both at once. The hopper
// command is built in its own module's directory (the repository's root), with that module's
// dependency versions, as its users build it; the chaos worker is built in this module.
func build(dir string) error {
	start := time.Now()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hopperjobs/hopper").Output()
	if err != nil {
		return fmt.Errorf("find the hopper module: %w", err)
	}
	bins.hopper, bins.worker = filepath.Join(dir, "hopper"), filepath.Join(dir, "chaosworker")
	errs := make(chan error, 2)
	for out, src := range map[string]struct{ dir, pkg string }{
		bins.hopper: {strings.TrimSpace(string(root)), "./cmd/hopper"},
		bins.worker: {"", "github.com/hopperjobs/hopper/e2e/chaos/chaosworker"},
	} {
		go func() {
			cmd := exec.Command("go", "build", "-o", out, src.pkg)
			cmd.Dir = src.dir
			b, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("go build %s: %v\n%s", src.pkg, err, b)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Printf("chaos: built hopper and chaosworker in %s (variant: %s)\n",
		time.Since(start).Round(time.Millisecond), variant())
	return nil
}

func variant() string {
	if *full {
		return "full"
	}
	return "short"
}

// pick returns short or full, as the variant says.
func pick[T any](short, long T) T {
	if *full {
		return long
	}
	return short
}

// inCI reports whether the suite runs in CI, where a missing prerequisite fails instead of
// skipping.
func inCI() bool { return os.Getenv("CI") == "true" }

// requireOrSkip skips t for a missing prerequisite, or fails it under CI=true.
func requireOrSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf(format+" (CI=true: failing rather than skipping)", args...)
	}
	t.Skipf(format, args...)
}
