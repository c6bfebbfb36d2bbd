//go:build chaos

package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the driver the store uses, to check the file from outside
)

// Scenario 5a: the server is SIGKILLed while clients enqueue batches as fast as it takes them,
// so most kills land in the middle of a group commit. After each kill the file, opened
// read-only, passes PRAGMA integrity_check and holds every enqueue that was acknowledged.
func TestSQLiteKillDuringGroupCommit(t *testing.T) {
	t.Parallel()
	fig := figures(t)
	h := newHarness(t)
	path := filepath.Join(h.dir, "hopper.db")
	srv := h.startServer("server", "--database", path)
	kills := pick(6, 20)
	e := newEnqueuer()
	var restarts []time.Duration
	var rows int
	for i := range kills {
		if i > 0 {
			began := time.Now()
			srv.restart()
			restarts = append(restarts, time.Since(began))
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.run(ctx, func() []*api { return []*api{srv.api} }, 50, 0, quickJob)
			}()
		}
		// Real time: the kill lands at a random point of the server's work on its wall clock.
		time.Sleep(300*time.Millisecond + rand.N(1200*time.Millisecond))
		srv.kill()
		cancel()
		wg.Wait()
		rows = checkSQLiteFile(t, path, e.ids())
	}
	fig.Jobs = fmt.Sprintf("%d acknowledged (%d rows)", len(e.ids()), rows)
	fig.Lost = "0"
	fig.Recovery = "restart → serving: " + durationsText(restarts)
	fig.note("%d SIGKILLs during enqueues at full speed (4 clients, batches of 50); integrity_check ok after each; "+
		"failed enqueues around the kills: %s", kills, e.errorSummary())
}

// checkSQLiteFile opens the database file read-only (its server is dead), requires PRAGMA
// integrity_check to answer ok and every id of acked to be there, and returns the job count.
func checkSQLiteFile(t *testing.T, path string, acked []string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var res []string
	rows, err := db.QueryContext(t.Context(), `PRAGMA integrity_check`)
	require.NoError(t, err, "integrity_check of %s", path)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		res = append(res, s)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.Equal(t, []string{"ok"}, res, "PRAGMA integrity_check of %s", path)

	ids := map[string]bool{}
	rows, err = db.QueryContext(t.Context(), `SELECT id FROM jobs`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids[id] = true
	}
	require.NoError(t, rows.Err())
	rows.Close()
	var missing []string
	for _, id := range acked {
		if !ids[id] {
			missing = append(missing, id)
		}
	}
	require.Empty(t, missing, "acknowledged enqueues missing from %s (%d of %d)", path, len(missing), len(acked))
	return len(ids)
}

// Scenario 5b: the SQLite file is on a 4 MiB tmpfs that fills up. Enqueues are refused with a
// clear error (UNAVAILABLE) — not a hang, not a crash — and once space is freed the server
// takes writes again without a restart, having lost nothing it acknowledged.
func TestSQLiteFullDisk(t *testing.T) {
	t.Parallel()
	fig := figures(t)
	if os.Geteuid() != 0 {
		requireOrSkip(t, "mounting a tmpfs needs root")
	}
	h := newHarness(t)
	disk := tempDir(t, "hopper-chaos-disk-")
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", disk).CombinedOutput(); err != nil {
		requireOrSkip(t, "mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { // after the server is killed (cleanups run last first)
		if out, err := exec.Command("umount", disk).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", disk, err, out)
		}
	})
	path := filepath.Join(disk, "hopper.db")
	srv := h.startServer("server", "--database", path)
	pid := srv.pid()

	filler := filepath.Join(disk, "filler")
	fill(t, filler, freeBytes(t, disk)-512<<10)
	e := newEnqueuer()
	padded := func() *hopperv1.JobSpec {
		spec := quickJob()
		spec.Headers = map[string]string{"pad": strings.Repeat("x", 2000)}
		return spec
	}
	batch := func() error {
		specs := make([]*hopperv1.JobSpec, 20)
		for i := range specs {
			specs[i] = padded()
		}
		_, err := e.enqueueOnce(t.Context(), srv.api, specs)
		return err
	}
	var refusal error
	require.True(t, pollUntil(60*time.Second, 0, func() bool { refusal = batch(); return refusal != nil }),
		"enqueues are refused once the disk is full")
	fullAt := time.Now()
	// It stays refused, promptly: the server process takes 3 s of writes on a full disk, in
	// real time, as a client that retries would send them.
	for time.Since(fullAt) < 3*time.Second {
		_ = batch()
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, srv.alive(), "the server survives a full disk")
	acked := e.ids()
	require.NotEmpty(t, acked, "enqueues were accepted before the disk filled up")
	_, getErr := srv.api.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: acked[0]})

	require.NoError(t, os.Remove(filler))
	freedAt := time.Now()
	var recovered time.Time
	ok := pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		if batch() == nil {
			recovered = time.Now()
			return true
		}
		return false
	})
	fig.Jobs = fmt.Sprint(len(e.ids()))
	fig.note("full disk: enqueues answered %s (first: %v), slowest refusal %s; reads meanwhile: %v",
		e.errorSummary(), refusal, secs(e.slowest), errText(getErr))
	require.True(t, ok, "enqueues succeed again within 30 s of freeing space, without a restart")
	fig.Recovery = "space freed → enqueues accepted: " + secs(recovered.Sub(freedAt))
	for range 5 {
		require.NoError(t, batch())
	}
	require.Equal(t, pid, srv.pid(), "no restart")

	hist, err := srv.api.histories(t.Context())
	require.NoError(t, err)
	lost := 0
	for _, id := range e.ids() {
		if hist[id] == nil {
			lost++
		}
	}
	fig.Lost = fmt.Sprint(lost)
	require.Zero(t, lost, "acknowledged enqueues lost")
	srv.kill()
	checkSQLiteFile(t, path, e.ids())

	require.NoError(t, getErr, "reads work while the disk is full")
	require.Less(t, e.slowest, 5*time.Second, "a refused enqueue answers promptly")
	require.Zero(t, e.errs["timeout"], "no enqueue hung")
	for code := range e.errs {
		require.Equal(t, "unavailable", code, "a full disk is refused as UNAVAILABLE (503), with a clear message; got %s", e.errorSummary())
	}
}

// freeBytes is the space left on the file system holding dir.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// fill writes n bytes to a new file at path.
func fill(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	for n > 0 {
		k := min(int64(len(buf)), n)
		_, err := f.Write(buf[:k])
		require.NoError(t, err)
		n -= k
	}
	require.NoError(t, f.Close())
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
