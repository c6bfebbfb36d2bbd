package governor

import (
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeNow is a time source the test moves.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

// cgroupFS is a machine whose process runs in the cgroup v2 /app.slice/hopper.service.
func cgroupFS() fstest.MapFS {
	dir := "sys/fs/cgroup/app.slice/hopper.service/"
	return fstest.MapFS{
		"proc/self/cgroup": {Data: []byte("0::/app.slice/hopper.service\n")},
		"proc/self/mountinfo": {Data: []byte(
			"22 1 0:21 / /proc rw,nosuid - proc proc rw\n" +
				"30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n")},
		dir + "cpu.stat":       {Data: []byte("usage_usec 1000000\nuser_usec 800000\nsystem_usec 200000\n")},
		dir + "cpu.max":        {Data: []byte("200000 100000\n")}, // 2 CPUs
		dir + "memory.current": {Data: []byte("3000000000\n")},
		dir + "memory.stat":    {Data: []byte("anon 2000000000\nfile 900000000\ninactive_file 500000000\n")},
		dir + "memory.max":     {Data: []byte("4294967296\n")},
		"proc/stat":            {Data: []byte("cpu  100 0 100 800 0 0 0 0 0 0\n")},
		"proc/meminfo":         {Data: []byte("MemTotal: 1000 kB\nMemAvailable: 250 kB\n")},
	}
}

func TestCgroupReader(t *testing.T) {
	t.Parallel()
	fsys, clk := cgroupFS(), &fakeNow{t: start}
	r, err := detect(fsys, clk.now, 8)
	require.NoError(t, err)
	require.IsType(t, &cgroupReader{}, r, "the process's cgroup accounts CPU and memory")

	// 1.5 s of CPU in 1 s on a quota of 2 CPUs is 75 %.
	fsys["sys/fs/cgroup/app.slice/hopper.service/cpu.stat"].Data = []byte("usage_usec 2500000\n")
	clk.t = clk.t.Add(time.Second)
	s, err := r.Read()
	require.NoError(t, err)
	require.InDelta(t, 0.75, s.CPU, 1e-9)
	require.Equal(t, int64(2500000000), s.Memory, "memory.current less inactive_file")
	require.Equal(t, int64(4<<30), s.MemoryLimit)

	// No quota: every CPU the process may run on (8 here) is available.
	fsys["sys/fs/cgroup/app.slice/hopper.service/cpu.max"].Data = []byte("max 100000\n")
	fsys["sys/fs/cgroup/app.slice/hopper.service/memory.max"].Data = []byte("max\n")
	fsys["sys/fs/cgroup/app.slice/hopper.service/cpu.stat"].Data = []byte("usage_usec 6500000\n")
	clk.t = clk.t.Add(time.Second)
	s, err = r.Read()
	require.NoError(t, err)
	require.InDelta(t, 0.5, s.CPU, 1e-9)
	require.Zero(t, s.MemoryLimit, "unbounded")
}

func TestCgroupReaderInAContainerWithoutCgroupNamespace(t *testing.T) {
	t.Parallel()
	// The container sees its own cgroup mounted at /sys/fs/cgroup, with the mount's root
	// being its path on the host.
	fsys := fstest.MapFS{
		"proc/self/cgroup":             {Data: []byte("0::/docker/abc\n")},
		"proc/self/mountinfo":          {Data: []byte("30 22 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n")},
		"sys/fs/cgroup/cpu.stat":       {Data: []byte("usage_usec 0\n")},
		"sys/fs/cgroup/memory.current": {Data: []byte("1000\n")},
		"sys/fs/cgroup/memory.max":     {Data: []byte("2000\n")},
	}
	dir, ok := cgroupDir(fsys)
	require.True(t, ok)
	require.Equal(t, "sys/fs/cgroup", dir)
}

func TestHostReaderWhenNoCgroupV2AccountsTheProcess(t *testing.T) {
	t.Parallel()
	fsys := cgroupFS()
	// A hybrid machine: the cgroup v2 tree has no cpu or memory controller (they are on v1).
	fsys["proc/self/cgroup"].Data = []byte("4:memory:/x\n1:cpu:/\n0::/\n")
	fsys["proc/self/mountinfo"].Data = []byte("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
	r, err := detect(fsys, time.Now, 2)
	require.NoError(t, err)
	require.IsType(t, &hostReader{}, r)

	// user 100→250, system 100→250, idle 800→900: 300 busy of 400 ticks.
	fsys["proc/stat"].Data = []byte("cpu  250 0 250 900 0 0 0 0 0 0\ncpu0 1 1 1 1\n")
	s, err := r.Read()
	require.NoError(t, err)
	require.InDelta(t, 0.75, s.CPU, 1e-9)
	require.Equal(t, int64(750*1024), s.Memory, "MemTotal less MemAvailable")
	require.Equal(t, int64(1000*1024), s.MemoryLimit)
}

func TestDetectFailsWithoutProc(t *testing.T) {
	t.Parallel()
	_, err := detect(fstest.MapFS{}, time.Now, 1)
	require.ErrorIs(t, err, ErrUnsupported)
}

// The readers on this machine's real files give sane numbers.
func TestReadsThisMachine(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the resource governor reads Linux's cgroup and /proc files")
	}
	r, err := Detect()
	require.NoError(t, err)
	t.Logf("reader: %T", r)
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ { // some CPU to measure
		_ = n * n
	}
	s, err := r.Read()
	require.NoError(t, err)
	t.Logf("sample: %+v", s)
	require.GreaterOrEqual(t, s.CPU, 0.0)
	bound := 1.0 // the machine's busy share
	if cg, ok := r.(*cgroupReader); ok {
		// A cgroup may burst over its quota within one scheduler period: at most every CPU busy.
		avail, err := cg.cpuAvailable()
		require.NoError(t, err)
		bound = float64(runtime.NumCPU()) / avail
	}
	require.LessOrEqual(t, s.CPU, bound+0.01, "a fraction of the CPU available")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	require.Greater(t, s.Memory, int64(0))
	require.GreaterOrEqual(t, s.MemoryLimit, int64(0))
	if s.MemoryLimit > 0 {
		require.LessOrEqual(t, s.Memory, s.MemoryLimit)
	}
	require.GreaterOrEqual(t, s.Memory, int64(ms.HeapInuse)/2, "at least about this process's own heap")
}
