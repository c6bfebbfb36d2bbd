package hopper

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

type heavyJob struct{}

func (heavyJob) Kind() string { return "heavy" }

type lightJob struct{}

func (lightJob) Kind() string { return "light" }

// kindGauge counts the running handlers of each kind and the most at once.
type kindGauge struct {
	mu            sync.Mutex
	running, peak map[string]int
	started       chan string
}

func (g *kindGauge) enter(kind string) {
	g.mu.Lock()
	g.running[kind]++
	g.peak[kind] = max(g.peak[kind], g.running[kind])
	g.mu.Unlock()
	g.started <- kind
}

func (g *kindGauge) leave(kind string) {
	g.mu.Lock()
	g.running[kind]--
	g.mu.Unlock()
}

// A process with KindConcurrency {"heavy": 2} runs at most 2 heavy jobs at once while its
// other slots run light ones, and claims no heavy job it cannot run: with both heavy slots
// busy, the other heavy jobs stay queued in the store (for other processes), not running
// here waiting. Once heavy jobs end, the waiting ones start. On both stores.
func TestKindConcurrencyBoundsAKindInTheProcess(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) Store{
		"sqlite": func(t *testing.T) Store {
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) Store {
			pgtest.Require(t)
			st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(),
				Schema: pgtest.FreshSchema(t, "hopper_kindconc_"), MaxConns: 4})
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := &kindGauge{running: map[string]int{}, peak: map[string]int{}, started: make(chan string, 100)}
			release := make(chan struct{})
			ws := NewWorkers()
			AddWorkerFunc(ws, func(ctx context.Context, job *Job[heavyJob]) error {
				g.enter("heavy")
				defer g.leave("heavy")
				<-release
				return nil
			})
			AddWorkerFunc(ws, func(ctx context.Context, job *Job[lightJob]) error {
				g.enter("light")
				defer g.leave("light")
				<-release
				return nil
			})
			c, err := NewClient(Config{Store: open(t), Workers: ws, MaxWorkers: 6, PollInterval: 20 * time.Millisecond,
				KindConcurrency: map[string]int{"heavy": 2}})
			require.NoError(t, err)
			require.NoError(t, c.Start(t.Context()))
			t.Cleanup(func() { stoptest.Within(t, c, 10*time.Second) })

			var batch []EnqueueParams
			for range 6 {
				batch = append(batch, EnqueueParams{Args: heavyJob{}})
			}
			for range 4 {
				batch = append(batch, EnqueueParams{Args: lightJob{}})
			}
			res, err := c.EnqueueMany(t.Context(), batch)
			require.NoError(t, err)

			started := map[string]int{}
			for range 6 { // 2 heavy and 4 light fill the 6 slots
				started[<-g.started]++
			}
			require.Equal(t, map[string]int{"heavy": 2, "light": 4}, started)
			running, err := c.List(t.Context(), &ListParams{States: []JobState{StateRunning}, Kinds: []string{"heavy"}})
			require.NoError(t, err)
			require.Len(t, running.Jobs, 2, "no heavy job is claimed beyond the kind's room")

			close(release)
			for _, r := range res {
				require.Eventually(t, func() bool {
					job, err := c.Get(context.Background(), r.Job.ID)
					require.NoError(t, err)
					return job.State == StateCompleted
				}, 10*time.Second, 5*time.Millisecond)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			require.Equal(t, 2, g.peak["heavy"], "at most 2 heavy jobs at once")
		})
	}
}

func TestKindConcurrencyRefusesBadValues(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[heavyJob]) error { return nil })
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer st.Close()
	for kind, n := range map[string]int{"heavy": 0, "unknown": 1} {
		_, err := NewClient(Config{Store: st, Workers: ws, KindConcurrency: map[string]int{kind: n}})
		require.ErrorIs(t, err, ErrInvalid)
		require.ErrorContains(t, err, "Config.KindConcurrency["+kind+"]")
	}
}
