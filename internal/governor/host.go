package governor

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// hostReader reads the whole machine's use, for a process in no cgroup v2 that limits it:
// every CPU is available to the process, so the CPU figure is the share of the machine's CPU
// time that was busy (/proc/stat, over the time between two reads), and memory is what the
// kernel cannot hand out without swapping (MemTotal less MemAvailable of /proc/meminfo)
// against MemTotal. Both count every process on the machine: the resources the process
// shares. (The Go runtime's own figures would miss the memory of everything else, and of
// memory that is not Go's.)
type hostReader struct {
	fsys        fs.FS
	busy, total uint64 // CPU time (USER_HZ ticks) at the previous read
}

func newHostReader(fsys fs.FS) (*hostReader, error) {
	r := &hostReader{fsys: fsys}
	var err error
	if r.busy, r.total, err = r.cpuTimes(); err != nil {
		return nil, err
	}
	if _, _, err := r.memory(); err != nil {
		return nil, err
	}
	return r, nil
}

// Read returns the machine's use since the previous read.
func (r *hostReader) Read() (Sample, error) {
	busy, total, err := r.cpuTimes()
	if err != nil {
		return Sample{}, err
	}
	var s Sample
	if total > r.total && busy >= r.busy {
		s.CPU = float64(busy-r.busy) / float64(total-r.total)
	}
	r.busy, r.total = busy, total
	if s.Memory, s.MemoryLimit, err = r.memory(); err != nil {
		return Sample{}, err
	}
	return s, nil
}

// cpuTimes returns the machine's busy and total CPU time from the first line of /proc/stat:
// "cpu user nice system idle iowait irq softirq steal guest guest_nice". Guest time is
// already counted in user and nice; idle and iowait are not busy.
func (r *hostReader) cpuTimes() (busy, total uint64, err error) {
	b, err := fs.ReadFile(r.fsys, "proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("read host CPU use: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("read host CPU use: unexpected /proc/stat line %q", line)
	}
	for i, v := range f[1:min(len(f), 9)] { // user … steal
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("read host CPU use: %w", err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// memory returns the memory in use on the machine and its total, in bytes.
func (r *hostReader) memory() (used, total int64, err error) {
	b, err := fs.ReadFile(r.fsys, "proc/meminfo")
	if err != nil {
		return 0, 0, fmt.Errorf("read host memory use: %w", err)
	}
	kb := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
			kb[k] = n
		}
	}
	memTotal, ok1 := kb["MemTotal"]
	avail, ok2 := kb["MemAvailable"]
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("read host memory use: no MemTotal or MemAvailable in /proc/meminfo")
	}
	return max(memTotal-avail, 0) * 1024, memTotal * 1024, nil
}
