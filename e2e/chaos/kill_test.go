//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// killParams shape a kill scenario.
type killParams struct {
	duration        time.Duration // how long jobs are enqueued and processes killed
	workers         int           // live chaos workers, half streaming, half polling
	workerKillEvery time.Duration // about this often a random worker is SIGKILLed and replaced
	serverKills     int           // SIGKILLs of a server (the leader first, then every other one)
	restartAfter    time.Duration // how long a killed server stays down
}

// Scenario 1: `hopper serve` on a SQLite file and remote workers (stream and poll); a random
// worker is SIGKILLed every few seconds and replaced, the server is SIGKILLed and restarted on
// the same file, while jobs are enqueued through the API.
func TestKillWorkersAndServerSQLite(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.startServer("server", "--database", filepath.Join(h.dir, "hopper.db"))
	runKills(t, h, []*server{srv}, killParams{
		duration: pick(30*time.Second, 120*time.Second), workers: 4, workerKillEvery: 3 * time.Second,
		serverKills: pick(1, 4), restartAfter: time.Second,
	})
}

// Scenario 2: the same with three `hopper serve` nodes on one PostgreSQL schema, workers
// spread over them; nodes are SIGKILLed too, the leader first.
func TestKillWorkersAndNodesPostgres(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	schema := pgtest.FreshSchema(t, "hopper_chaos_")
	h := newHarness(t)
	db := []string{"--database", pgtest.URL(), "--schema", schema, "--conns", pgNodeConns}
	nodes := []*server{h.startServer("node-1", db...)} // migrates the schema
	for _, name := range []string{"node-2", "node-3"} {
		nodes = append(nodes, h.startServer(name, db...))
	}
	runKills(t, h, nodes, killParams{
		duration: pick(30*time.Second, 120*time.Second), workers: 6, workerKillEvery: 3 * time.Second,
		serverKills: pick(1, 4), restartAfter: 2 * time.Second,
	})
}

// serverKill is one SIGKILL of a server.
type serverKill struct {
	name              string
	leader            bool
	killed, restarted time.Time
	leaderAgain       time.Duration // until some node led again (0: not measured)
}

// workerKill is one SIGKILL of a worker.
type workerKill struct {
	name string
	at   time.Time
}

func runKills(t *testing.T, h *harness, servers []*server, p killParams) {
	fig := figures(t)
	for i := range p.workers {
		mode := []string{"stream", "poll"}[i%2]
		h.startWorker(h.nextName("w"), servers[i%len(servers)].url(), workerOpts{mode: mode})
	}
	live := func() []*api {
		var out []*api
		for _, s := range servers {
			if s.alive() {
				out = append(out, s.api)
			}
		}
		return out
	}
	e := newEnqueuer()
	stopEnqueue := e.start(t.Context(), live, 10, 100*time.Millisecond, quickJob)
	defer stopEnqueue()

	k := dealKills(t, h, servers, p)
	defer k.wait()
	stopEnqueue()
	acked := e.ids()
	require.NotEmpty(t, acked)
	drainedAt := h.waitDrained(func() *api { return live()[0] }, len(acked), 150*time.Second)
	h.stopWorkers()
	k.wait()

	logs := readWorkerLogs(t, h.dir)
	hist, err := live()[0].histories(t.Context())
	require.NoError(t, err)
	v := verifyRuns(acked, hist, logs)

	fig.Jobs = fmt.Sprintf("%d (%d handler runs)", v.Jobs, v.Runs)
	fig.Lost = fmt.Sprint(v.Lost)
	if v.DeadLettered > 0 {
		fig.Lost += fmt.Sprintf(" (+%d dead letters worker_lost)", v.DeadLettered)
	}
	fig.Dups = v.dupText()
	fig.Recovery = k.recovery(logs)
	fig.note("%d worker and %d server SIGKILLs in %s; drained %s after the last enqueue; enqueue errors: %s",
		len(k.workers), len(k.servers), secs(p.duration), secs(drainedAt.Sub(k.start.Add(p.duration))), e.errorSummary())
	v.require(t)
	require.Zero(t, v.Lost, "acknowledged jobs lost")
}

// kills are the SIGKILLs dealKills dealt.
type kills struct {
	start   time.Time
	workers []workerKill
	servers []*serverKill

	mu sync.Mutex     // guards each serverKill's leaderAgain
	wg sync.WaitGroup // the goroutines measuring how long a cluster went without a leader
}

// dealKills SIGKILLs a random worker about every p.workerKillEvery for p.duration, replacing
// each with a new one of the same options, and SIGKILLs p.serverKills servers during the first
// two thirds of it (killServer), restarting each. It returns once p.duration has passed; call
// the result's wait before reading its leaders' takeovers.
func dealKills(t *testing.T, h *harness, servers []*server, p killParams) *kills {
	t.Helper()
	k := &kills{start: time.Now()}
	// Server kills fall in the first two thirds of the run, so the last one's jobs are rescued
	// before the drain deadline.
	killAt := func(n int) time.Time {
		return k.start.Add(time.Duration(n+1) * (p.duration * 2 / 3) / time.Duration(p.serverKills+1))
	}
	for time.Since(k.start) < p.duration { // real time: the processes run on the wall clock
		sleepJitter(p.workerKillEvery)
		ws := h.liveWorkers()
		victim := ws[rand.N(len(ws))]
		victim.kill()
		k.workers = append(k.workers, workerKill{victim.wname, time.Now()})
		h.startWorker(h.nextName("w"), victim.url, victim.opts)

		if n := len(k.servers); n < p.serverKills && time.Now().After(killAt(n)) {
			sk := killServer(t, h, servers, n, p.restartAfter)
			k.servers = append(k.servers, sk)
			if len(servers) > 1 {
				k.wg.Add(1)
				go func() { // how long the cluster went without a leader
					defer k.wg.Done()
					if pollUntil(60*time.Second, 100*time.Millisecond, func() bool { return h.leader() != nil }) {
						k.mu.Lock()
						sk.leaderAgain = time.Since(sk.killed)
						k.mu.Unlock()
					}
				}()
			}
		}
	}
	return k
}

// wait waits for the leader measurements; kills' figures are complete after it.
func (k *kills) wait() { k.wg.Wait() }

// recovery describes, from the workers' logs, how long the kills held up work: a killed
// worker's jobs until they ran again, a killed server until completions went on, and a
// killed leader until a node led again.
func (k *kills) recovery(logs *workerLogs) string {
	var rerun, flowing, takeovers []time.Duration
	for _, wk := range k.workers {
		rerun = append(rerun, rerunDelays(logs, wk)...)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, sk := range k.servers {
		if at := logs.firstAfter(sk.restarted, completedOK); !at.IsZero() {
			flowing = append(flowing, at.Sub(sk.killed))
		}
		if sk.leaderAgain > 0 {
			takeovers = append(takeovers, sk.leaderAgain)
		}
	}
	s := fmt.Sprintf("worker killed → its jobs rerun: %s; server killed → completions again: %s",
		durationsText(rerun), durationsText(flowing))
	if len(takeovers) > 0 {
		s += "; leader killed → leader again: " + durationsText(takeovers)
	}
	return s
}

// killServer SIGKILLs the k-th victim: the leader on even k (when there are several
// servers), another node on odd k; it restarts it after down.
func killServer(t *testing.T, h *harness, servers []*server, k int, down time.Duration) *serverKill {
	t.Helper()
	victim := servers[rand.N(len(servers))]
	leader := h.leader()
	if len(servers) > 1 && leader != nil {
		if k%2 == 0 {
			victim = leader
		} else {
			for victim == leader {
				victim = servers[rand.N(len(servers))]
			}
		}
	}
	sk := &serverKill{name: victim.name, leader: victim == leader}
	victim.kill()
	sk.killed = time.Now()
	time.Sleep(down) // real time: the server stays dead while the others carry on
	sk.restarted = victim.restart()
	t.Logf("killed %s (leader: %t), back after %s", victim.name, sk.leader, secs(sk.restarted.Sub(sk.killed)))
	return sk
}

// rerunDelays returns, for each job the killed worker was running, how long after the kill
// it started again elsewhere.
func rerunDelays(logs *workerLogs, k workerKill) []time.Duration {
	running := map[string]bool{}
	for _, l := range logs.lines {
		if l.T > k.at.UnixNano() {
			break
		}
		if l.Worker != k.name {
			continue
		}
		switch l.Ev {
		case "start":
			running[l.Job] = true
		case "end":
			delete(running, l.Job)
		}
	}
	var out []time.Duration
	for job := range running {
		for _, s := range logs.starts[job] {
			if s.T > k.at.UnixNano() {
				out = append(out, time.Duration(s.T-k.at.UnixNano()))
				break
			}
		}
	}
	return out
}
