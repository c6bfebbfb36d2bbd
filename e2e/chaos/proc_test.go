//go:build chaos

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is a process under test: started, signaled and restarted by the test, killed (SIGKILL)
// at cleanup whatever happens. Its stdout and stderr are appended to logPath.
type proc struct {
	t       *testing.T
	name    string
	bin     string
	args    []string
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
	starts  int
}

func newProc(t *testing.T, name, bin, logPath string, args ...string) *proc {
	p := &proc{t: t, name: name, bin: bin, args: args, logPath: logPath}
	t.Cleanup(p.kill)
	return p
}

// start runs the process (again); it must not be running.
func (p *proc) start() {
	p.t.Helper()
	require.NoError(p.t, p.tryStart())
}

// tryStart is start for goroutines other than the test's.
func (p *proc) tryStart() error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the child has its own copy
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Should the test binary die, its processes die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.exitErr = cmd, exited, nil
	p.starts++
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

func (p *proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// alive reports whether the process runs (a stopped process runs).
func (p *proc) alive() bool {
	cmd, exited := p.current()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

func (p *proc) pid() int {
	cmd, _ := p.current()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	cmd, _ := p.current()
	require.NotNil(p.t, cmd, "%s was never started", p.name)
	require.NoError(p.t, cmd.Process.Signal(sig), "signal %s to %s", sig, p.name)
}

// kill SIGKILLs the process, if it runs, and waits for it to be gone.
func (p *proc) kill() {
	cmd, exited := p.current()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop asks the process to end (SIGTERM) and waits up to grace, then kills it. It reports
// whether the process ended by itself, with its exit error.
func (p *proc) stop(grace time.Duration) (bool, error) {
	cmd, exited := p.current()
	if cmd == nil {
		return true, nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.exitErr
	case <-time.After(grace):
		p.kill()
		return false, fmt.Errorf("%s did not stop within %s", p.name, grace)
	}
}

// cpu is the CPU time (user + system) the running process has used, from /proc/<pid>/stat.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ") ": utime and stime
	// are fields 14 and 15 of the line, 12 and 13 after it.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux platform Go
// supports.
const clockTicks = 100

// logSize is the size of the process's log file: a mark to count lines from.
func (p *proc) logSize() int64 {
	st, err := os.Stat(p.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logSince returns what the log file holds from byte offset from on.
func (p *proc) logSince(from int64) []byte {
	b, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(b)) < from {
		return nil
	}
	return b[from:]
}

// window measures a process over a stretch of time (an outage): CPU used and log lines
// written. It follows one process incarnation.
type window struct {
	p        *proc
	start    time.Time
	cpu0     time.Duration
	log0     int64
	Duration time.Duration
	CPU      time.Duration
	Lines    int
	Top      string // the most frequent log message in the window, with its count
}

func (p *proc) measure() *window {
	return &window{p: p, start: time.Now(), cpu0: p.cpu(), log0: p.logSize()}
}

// end closes the window.
func (w *window) end() *window {
	w.Duration = time.Since(w.start)
	w.CPU = w.p.cpu() - w.cpu0
	text := w.p.logSince(w.log0)
	w.Lines = bytes.Count(text, []byte{'\n'})
	w.Top = topMessage(text)
	return w
}

// CPUShare is the CPU used over the window as a share of one core (0.79 = 79 %).
func (w *window) CPUShare() float64 {
	if w.Duration <= 0 {
		return 0
	}
	return w.CPU.Seconds() / w.Duration.Seconds()
}

// LineRate is log lines per second over the window.
func (w *window) LineRate() float64 {
	if w.Duration <= 0 {
		return 0
	}
	return float64(w.Lines) / w.Duration.Seconds()
}

func (w *window) String() string {
	s := fmt.Sprintf("%d log lines in %s (%.1f/s), CPU %.1f%% of a core", w.Lines,
		w.Duration.Round(100*time.Millisecond), w.LineRate(), 100*w.CPUShare())
	if w.Top != "" {
		s += "; most: " + w.Top
	}
	return s
}

// topMessage names the most frequent msg= of slog text lines, with its count.
func topMessage(text []byte) string {
	counts := map[string]int{}
	for _, line := range bytes.Split(text, []byte{'\n'}) {
		if m := slogMsg(string(line)); m != "" {
			counts[m]++
		}
	}
	best, n := "", 0
	for m, c := range counts {
		if c > n || (c == n && m < best) {
			best, n = m, c
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%q ×%d", best, n)
}

// slogMsg returns the msg of a log/slog text line ("time=… level=… msg=…").
func slogMsg(line string) string {
	i := strings.Index(line, " msg=")
	if i < 0 {
		return ""
	}
	rest := line[i+5:]
	if strings.HasPrefix(rest, `"`) {
		if s, err := strconv.QuotedPrefix(rest); err == nil {
			u, _ := strconv.Unquote(s)
			return u
		}
	}
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		return rest[:j]
	}
	return rest
}
