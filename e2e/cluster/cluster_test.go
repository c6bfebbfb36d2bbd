// Package clustertest runs Hopper as a real cluster: several worker processes (this test
// binary, re-executed) on one PostgreSQL schema, one of them killed mid-run.
package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "worker" {
		os.Exit(workerMain())
	}
	os.Exit(m.Run())
}

const (
	totalJobs = 20000
	// Cluster timings of the worker processes: a killed node is declared dead after nodeTTL
	// (long before its jobs' leases expire), and leadership moves within about 4/3·leaderTTL.
	leaderTTL = 2 * time.Second
	nodeTTL   = 3 * time.Second
	// leaderChangeBound is what the test allows for a new leader after the old one is killed.
	leaderChangeBound = 10 * time.Second
)

type cluster struct {
	t      *testing.T
	schema string
	dir    string
	pool   *pgxpool.Pool
	procs  map[string]*exec.Cmd
}

// TestClusterSurvivesKill enqueues 20,000 jobs, works them with three processes, SIGKILLs the
// leader mid-run and starts a replacement. Every job must complete exactly once as far as the
// store is concerned; a job that ran twice must have a recorded lease_expired attempt (the
// killed node's); and a new leader must take over within leaderChangeBound.
func TestClusterSurvivesKill(t *testing.T) {
	pgtest.Require(t)
	if testing.Short() {
		t.Skip("starts four processes")
	}
	c := newCluster(t)
	c.enqueue(totalJobs)
	for _, id := range []string{"proc-1", "proc-2", "proc-3"} {
		c.start(id)
	}
	c.waitCompleted(totalJobs/4, 60*time.Second)
	victim := c.leader()
	require.Contains(t, c.procs, victim, "the leader is one of the worker processes")
	killedAt := time.Now()
	require.NoError(t, c.procs[victim].Process.Kill()) // SIGKILL: no shutdown, no release
	_ = c.procs[victim].Wait()
	delete(c.procs, victim)
	c.start("proc-4")

	require.Eventually(t, func() bool { l := c.leader(); return l != "" && l != victim },
		leaderChangeBound, 50*time.Millisecond, "a new leader within %s", leaderChangeBound)
	t.Logf("leader %s killed; new leader %s after %s", victim, c.leader(), time.Since(killedAt).Round(time.Millisecond))

	c.waitCompleted(totalJobs, 90*time.Second)
	c.stopAll()
	c.verify(victim)
}

func newCluster(t *testing.T) *cluster {
	schema := pgtest.FreshSchema(t, "hopper_cluster_")
	st, err := pgstore.Open(t.Context(), pgstore.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4})
	require.NoError(t, err) // creates and migrates the schema
	require.NoError(t, st.Close())
	pool, err := pgxpool.New(t.Context(), pgtest.URL())
	require.NoError(t, err)
	c := &cluster{t: t, schema: schema, dir: t.TempDir(), pool: pool, procs: map[string]*exec.Cmd{}}
	t.Cleanup(func() {
		for _, p := range c.procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		pool.Close()
	})
	return c
}

func (c *cluster) table(name string) string { return pgx.Identifier{c.schema, name}.Sanitize() }

func (c *cluster) enqueue(n int) {
	st, err := pgstore.Open(c.t.Context(), pgstore.Config{URL: pgtest.URL(), Schema: c.schema, MaxConns: 2})
	require.NoError(c.t, err)
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true})
	require.NoError(c.t, err)
	for done := 0; done < n; done += 1000 {
		batch := make([]hopper.EnqueueParams, min(1000, n-done))
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: clusterJob{SleepMS: 1}}
		}
		_, err := client.EnqueueMany(c.t.Context(), batch)
		require.NoError(c.t, err)
	}
}

func (c *cluster) start(id string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=worker", envSchema+"="+c.schema, envID+"="+id,
		envLog+"="+filepath.Join(c.dir, id+".log"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	require.NoError(c.t, cmd.Start())
	c.procs[id] = cmd
}

func (c *cluster) count(query string, args ...any) int {
	var n int
	require.NoError(c.t, c.pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

func (c *cluster) waitCompleted(n int, within time.Duration) {
	q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE state = 'completed'`, c.table("jobs"))
	require.Eventually(c.t, func() bool { return c.count(q) >= n }, within, 100*time.Millisecond,
		"%d jobs completed", n)
}

// leader is the node holding a live leader lease, or "".
func (c *cluster) leader() string {
	var id string
	err := c.pool.QueryRow(context.Background(), fmt.Sprintf(
		`SELECT node_id FROM %s WHERE expires_at > now()`, c.table("leader"))).Scan(&id)
	if err != nil {
		return ""
	}
	return id
}

// stopAll stops the workers gracefully (SIGTERM).
func (c *cluster) stopAll() {
	for id, p := range c.procs {
		require.NoError(c.t, p.Process.Signal(syscall.SIGTERM))
		require.NoError(c.t, p.Wait(), "worker %s exits cleanly", id)
		delete(c.procs, id)
	}
}

// verify reads every job's attempts through a client, as a user would: each job completed
// once, after attempts whose worker was lost, and a job that ran more than once has a lost
// attempt for each extra run.
func (c *cluster) verify(victim string) {
	jobs := c.table("jobs")
	require.Zero(c.t, c.count(fmt.Sprintf(`SELECT count(*) FROM %s WHERE state <> 'completed'`, jobs)), "no job lost")
	require.Equal(c.t, totalJobs, c.count(fmt.Sprintf(`SELECT count(*) FROM %s`, jobs)))

	st, err := pgstore.Open(c.t.Context(), pgstore.Config{URL: pgtest.URL(), Schema: c.schema, MaxConns: 2})
	require.NoError(c.t, err)
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true})
	require.NoError(c.t, err)
	runs := c.executions()
	require.Len(c.t, runs, totalJobs, "every job ran")
	rescued := 0
	for id, n := range runs {
		as, err := client.Attempts(c.t.Context(), id)
		require.NoError(c.t, err)
		require.NotEmpty(c.t, as, "job %s", id)
		require.Equal(c.t, hopper.OutcomeOK, as[len(as)-1].Outcome, "job %s ends with its one successful attempt", id)
		for _, a := range as[:len(as)-1] {
			require.Equal(c.t, hopper.OutcomeLeaseExpired, a.Outcome, "job %s: every earlier attempt lost its worker", id)
		}
		rescued += len(as) - 1
		require.GreaterOrEqual(c.t, len(as)-1, n-1,
			"job %s ran %d times: each extra run follows a recorded lease_expired attempt", id, n)
	}
	c.t.Logf("%d attempts of %s were rescued", rescued, victim)
}

// executions counts, per job, the handler runs the worker processes logged.
func (c *cluster) executions() map[string]int {
	runs := map[string]int{}
	files, err := filepath.Glob(filepath.Join(c.dir, "*.log"))
	require.NoError(c.t, err)
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(c.t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			runs[sc.Text()]++
		}
		require.NoError(c.t, sc.Err())
		f.Close()
	}
	return runs
}
