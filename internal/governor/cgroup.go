package governor

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// cgroupReader reads the use of the process's cgroup v2: the CPU it used (cpu.stat
// usage_usec) over the time between two reads, against its quota (cpu.max, or every CPU the
// process may run on when there is none), and its memory working set (memory.current less
// the inactive page cache of memory.stat: cache the kernel reclaims before it would kill the
// process, which a job writing files fills up without being short of memory) against
// memory.max. The figures cover every process of the cgroup, as its limits do.
type cgroupReader struct {
	fsys fs.FS
	dir  string // the cgroup's directory in fsys, e.g. "sys/fs/cgroup"
	now  func() time.Time
	cpus int // CPUs the process may run on: the bound when cpu.max sets none

	usage int64     // usage_usec at the previous read
	at    time.Time // time of the previous read
}

func newCgroupReader(fsys fs.FS, dir string, now func() time.Time, cpus int) (*cgroupReader, error) {
	r := &cgroupReader{fsys: fsys, dir: dir, now: now, cpus: max(cpus, 1)}
	usage, err := r.cpuUsage()
	if err != nil {
		return nil, err
	}
	r.usage, r.at = usage, now()
	return r, nil
}

// Read returns the cgroup's use since the previous read.
func (r *cgroupReader) Read() (Sample, error) {
	usage, err := r.cpuUsage()
	if err != nil {
		return Sample{}, err
	}
	now := r.now()
	avail, err := r.cpuAvailable()
	if err != nil {
		return Sample{}, err
	}
	var s Sample
	if elapsed := now.Sub(r.at).Microseconds(); elapsed > 0 {
		s.CPU = max(float64(usage-r.usage)/(float64(elapsed)*avail), 0)
	}
	r.usage, r.at = usage, now
	if s.Memory, s.MemoryLimit, err = r.memory(); err != nil {
		return Sample{}, err
	}
	return s, nil
}

func (r *cgroupReader) cpuUsage() (int64, error) {
	b, err := fs.ReadFile(r.fsys, path.Join(r.dir, "cpu.stat"))
	if err != nil {
		return 0, fmt.Errorf("read cgroup CPU use: %w", err)
	}
	usage, ok := field(string(b), "usage_usec")
	if !ok {
		return 0, fmt.Errorf("read cgroup CPU use: no usage_usec in %s", path.Join(r.dir, "cpu.stat"))
	}
	return usage, nil
}

// cpuAvailable is how many CPUs the cgroup may use: its quota ("max 100000" is none), at
// most the CPUs the process may run on.
func (r *cgroupReader) cpuAvailable() (float64, error) {
	b, err := fs.ReadFile(r.fsys, path.Join(r.dir, "cpu.max"))
	if errors.Is(err, fs.ErrNotExist) {
		return float64(r.cpus), nil // the cpu controller is not enabled here: no quota
	}
	if err != nil {
		return 0, fmt.Errorf("read cgroup CPU quota: %w", err)
	}
	quota, period, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if quota == "max" {
		return float64(r.cpus), nil
	}
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, fmt.Errorf("read cgroup CPU quota: cannot parse %q", strings.TrimSpace(string(b)))
	}
	return min(q/p, float64(r.cpus)), nil
}

// memory returns the cgroup's working set and its limit (0: none).
func (r *cgroupReader) memory() (used, limit int64, err error) {
	current, err := readInt(r.fsys, path.Join(r.dir, "memory.current"))
	if err != nil {
		return 0, 0, fmt.Errorf("read cgroup memory use: %w", err)
	}
	if b, err := fs.ReadFile(r.fsys, path.Join(r.dir, "memory.stat")); err == nil {
		if inactive, ok := field(string(b), "inactive_file"); ok {
			current = max(current-inactive, 0)
		}
	}
	b, err := fs.ReadFile(r.fsys, path.Join(r.dir, "memory.max"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, fmt.Errorf("read cgroup memory limit: %w", err)
	}
	if v := strings.TrimSpace(string(b)); err == nil && v != "max" {
		if limit, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("read cgroup memory limit: cannot parse %q", v)
		}
	}
	return current, limit, nil
}

// cgroupDir finds the directory of the process's cgroup v2 in fsys (rooted at /): where a
// cgroup2 file system is mounted (/proc/self/mountinfo) joined with the process's path in it
// (the "0::" line of /proc/self/cgroup). It reports false when the process is in no cgroup
// v2 that accounts both CPU and memory (cgroup v1, or a hybrid whose v2 tree has neither
// controller, or the root cgroup of a host): the host reader applies then.
func cgroupDir(fsys fs.FS) (string, bool) {
	cg, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return "", false
	}
	var rel string
	found := false
	for line := range strings.SplitSeq(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return "", false
	}
	mi, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	for line := range strings.SplitSeq(string(mi), "\n") {
		root, mount, ok := cgroup2Mount(line)
		if !ok {
			continue
		}
		// Without a cgroup namespace the mount's root may be the process's own cgroup (a
		// container's bind mount): its path in the mount is what follows that root.
		inMount := rel
		if root != "/" {
			inMount = strings.TrimPrefix(rel, root)
		}
		for _, dir := range []string{path.Join(mount, inMount), mount} {
			dir = strings.TrimPrefix(path.Clean(dir), "/")
			if usable(fsys, dir) {
				return dir, true
			}
		}
	}
	return "", false
}

// cgroup2Mount parses one line of /proc/self/mountinfo and returns the root and mount point
// of a cgroup2 mount.
func cgroup2Mount(line string) (root, mount string, ok bool) {
	pre, post, found := strings.Cut(line, " - ")
	if !found || !strings.HasPrefix(post, "cgroup2 ") {
		return "", "", false
	}
	f := strings.Fields(pre)
	if len(f) < 5 {
		return "", "", false
	}
	return f[3], f[4], true
}

// usable reports whether the cgroup directory accounts CPU and memory.
func usable(fsys fs.FS, dir string) bool {
	for _, name := range []string{"cpu.stat", "memory.current"} {
		if _, err := fs.Stat(fsys, path.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}
