package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// buildHopper builds the hopper binary from the main module at o.hopperSrc into dir.
func buildHopper(ctx context.Context, o *options, dir string) (string, error) {
	if o.hopperBin != "" {
		return o.hopperBin, nil
	}
	src, err := filepath.Abs(o.hopperSrc)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hopper")
	// Build inside the main module (bench/peers is a separate module, so a relative package
	// path from here would be outside it).
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/hopper")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build hopper in %s: %w\n%s", src, err, stderr.String())
	}
	return bin, nil
}

// hopperError is a failed `hopper bench` run: its stderr is printed as is.
type hopperError struct {
	args   []string
	err    error
	stderr string
	stdout string
}

func (e *hopperError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hopper %s: %v", strings.Join(e.args, " "), e.err)
	if e.stdout != "" {
		fmt.Fprintf(&b, "\n--- hopper stdout ---\n%s", strings.TrimRight(e.stdout, "\n"))
	}
	if e.stderr != "" {
		fmt.Fprintf(&b, "\n--- hopper stderr ---\n%s", strings.TrimRight(e.stderr, "\n"))
	}
	return b.String()
}

// runHopper runs `hopper bench --json` with the same parameters and parses its one JSON object.
func runHopper(ctx context.Context, o *options, bin string) (*result, error) {
	args := []string{"bench",
		"--database", o.database,
		"--jobs", strconv.Itoa(o.jobs),
		"--workers", strconv.Itoa(o.workers),
		"--batch", strconv.Itoa(o.batch),
		"--rate", strconv.Itoa(o.rate),
		"--latency-jobs", strconv.Itoa(latencyJobsFlag(o.latencyJobs)),
		"--json"}
	var res result
	line, err := runHopperJSON(ctx, o, bin, args, &res)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(line), &raw)
	res.Raw = raw
	if res.Jobs != o.jobs || res.JobsPerSec <= 0 {
		return nil, &hopperError{args: redact(args), err: fmt.Errorf("unexpected result %s", line)}
	}
	return &res, nil
}

// runHopperJSON runs hopper with args (and --hopper-args) and decodes the JSON object it
// prints, the last line that starts with '{', into v; it returns that line.
func runHopperJSON(ctx context.Context, o *options, bin string, args []string, v any) (string, error) {
	args = append(args, o.hopperArgs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	fail := func(err error) error {
		return &hopperError{args: redact(args), err: err, stderr: stderr.String(), stdout: stdout.String()}
	}
	if err := cmd.Run(); err != nil {
		return "", fail(err)
	}
	var line string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			line = l
		}
	}
	if line == "" {
		return "", fail(fmt.Errorf("no JSON object on stdout"))
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		return "", fail(fmt.Errorf("parse JSON: %w", err))
	}
	return line, nil
}

// latencyJobsFlag maps "no latency phase" (0) to hopper's -1.
func latencyJobsFlag(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// redact hides a password in the database URL of printed arguments.
func redact(args []string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		if i > 0 && out[i-1] == "--database" {
			out[i] = redactURL(out[i])
		}
	}
	return out
}
