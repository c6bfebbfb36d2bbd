package governor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Sample is one reading of the process's resource use.
type Sample struct {
	// CPU is the CPU used since the previous reading, as a fraction of the CPU available to
	// the process: 1 is all of it.
	CPU float64
	// Memory is the memory in use, in bytes.
	Memory int64
	// MemoryLimit is the memory available to the process, in bytes; 0 when unbounded.
	MemoryLimit int64
}

// Reader reads the process's resource use. Each Read measures CPU since the previous one (or
// since the reader was made), so a Reader is not for concurrent use.
type Reader interface {
	Read() (Sample, error)
}

// ReaderFunc adapts a function to a Reader.
type ReaderFunc func() (Sample, error)

// Read calls f.
func (f ReaderFunc) Read() (Sample, error) { return f() }

// ErrUnsupported is returned by Detect where neither a cgroup v2 nor /proc can be read: the
// resource governor works on Linux only.
var ErrUnsupported = errors.New("resource governor: cannot read CPU and memory use on this system (Linux only)")

// Detect returns the reader for this process: the cgroup v2 reader when the process runs in
// a cgroup v2 with the cpu and memory controllers (a container, a systemd unit), else the
// host reader (the whole machine's /proc/stat and /proc/meminfo). It returns ErrUnsupported
// off Linux.
func Detect() (Reader, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrUnsupported
	}
	return detect(os.DirFS("/"), time.Now, runtime.NumCPU())
}

// detect is Detect on fsys (rooted at /), with now timing the CPU samples and cpus the CPUs
// the process may run on.
func detect(fsys fs.FS, now func() time.Time, cpus int) (Reader, error) {
	if dir, ok := cgroupDir(fsys); ok {
		r, err := newCgroupReader(fsys, dir, now, cpus)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	r, err := newHostReader(fsys)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return r, nil
}

// readInt reads a file holding one integer.
func readInt(fsys fs.FS, name string) (int64, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return n, nil
}

// field returns the value of the line "key value" (value an integer) of a flat-keyed file
// (cpu.stat, memory.stat), and whether it was there.
func field(text, key string) (int64, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
