package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
)

// soakJob is the soak's no-op job.
type soakJob struct {
	// T is the enqueue time in unix nanoseconds.
	T int64 `json:"t"`
	// N numbers the jobs from 1: job N fails its first attempt when N is a multiple of the
	// load's failEvery.
	N int64 `json:"n"`
}

func (soakJob) Kind() string { return "bench-soak" }

// errSoakFailure is the failure of the jobs that fail their first attempt.
var errSoakFailure = errors.New("soak: a planned failure, retried")

// soakLoad is the soak's worker and observer: it fails the planned first attempts, records
// the enqueue→start latency of first attempts and counts what happens, per row.
type soakLoad struct {
	failEvery int64
	seq       atomic.Int64 // the last job number handed out

	enqueued, enqueueErrs, completed, failed, retried atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration // first attempts' enqueue→start, since the last row
}

func newSoakLoad(failEvery int) *soakLoad {
	return &soakLoad{failEvery: int64(failEvery)}
}

func (l *soakLoad) workers() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[soakJob]) error {
		if job.Attempt > 1 {
			return nil
		}
		d := time.Since(time.Unix(0, job.Args.T))
		l.mu.Lock()
		l.latencies = append(l.latencies, d)
		l.mu.Unlock()
		if job.Args.N%l.failEvery == 0 {
			return errSoakFailure
		}
		return nil
	})
	return ws
}

// ObserveJob counts outcomes and retries as the client writes and starts them.
func (l *soakLoad) ObserveJob(_ context.Context, ev hopper.JobEvent) {
	switch {
	case ev.Type == hopper.JobEnded && ev.State == hopper.StateCompleted:
		l.completed.Add(1)
	case ev.Retried():
		l.failed.Add(1)
	case ev.Type == hopper.JobStarted && ev.Attempt > 1:
		l.retried.Add(1)
	}
}

// takeLatencies returns the latencies since the last call and starts a new list in buf, the
// list the previous call returned (so a long run allocates no new lists).
func (l *soakLoad) takeLatencies(buf []time.Duration) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.latencies
	l.latencies = buf[:0]
	return out
}

// soakUnits are the enqueue calls' sizes, in turn: of every 100 jobs, 20 are enqueued one per
// Enqueue call (as a web request enqueues its job) and 80 in EnqueueMany batches of 5, 10, 25
// and 40 (as an import or a fan-out does).
var soakUnits = []int{1, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1, 10, 1, 1, 1, 1, 1, 25, 1, 1, 1, 1, 1, 40}

// soakTick is how often the pacer sends the enqueues that have come due, and soakEnqueuers
// how many enqueue calls can be in flight.
const (
	soakTick      = 10 * time.Millisecond
	soakEnqueuers = 16
)

// pacer enqueues rate jobs a second through the client: every soakTick it hands the calls
// that have come due (the next size in soakUnits, once that many jobs are due) to
// soakEnqueuers goroutines. Falling behind, it catches up, and the rows show it.
type pacer struct {
	client *hopper.Client
	load   *soakLoad
	rate   int
}

func newPacer(client *hopper.Client, load *soakLoad, rate int) *pacer {
	return &pacer{client: client, load: load, rate: rate}
}

// run paces until ctx ends and returns once every call it started has returned.
func (p *pacer) run(ctx context.Context) {
	units := make(chan int, soakEnqueuers)
	var wg sync.WaitGroup
	for range soakEnqueuers {
		wg.Go(func() {
			for n := range units {
				p.enqueue(ctx, n)
			}
		})
	}
	defer wg.Wait()
	defer close(units)
	tick := time.NewTicker(soakTick)
	defer tick.Stop()
	start, sent, next := time.Now(), int64(0), 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		due := int64(time.Since(start).Seconds() * float64(p.rate))
		for sent+int64(soakUnits[next]) <= due {
			select {
			case units <- soakUnits[next]:
			case <-ctx.Done():
				return
			}
			sent += int64(soakUnits[next])
			next = (next + 1) % len(soakUnits)
		}
	}
}

// enqueue makes one call of n jobs (Enqueue for one, EnqueueMany for more) and counts it.
func (p *pacer) enqueue(ctx context.Context, n int) {
	l := p.load
	first := l.seq.Add(int64(n)) - int64(n) + 1
	t := time.Now().UnixNano()
	var err error
	if n == 1 {
		_, err = p.client.Enqueue(ctx, soakJob{T: t, N: first}, nil)
	} else {
		batch := make([]hopper.EnqueueParams, n)
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: soakJob{T: t, N: first + int64(i)}}
		}
		_, err = p.client.EnqueueMany(ctx, batch)
	}
	switch {
	case err == nil:
		l.enqueued.Add(int64(n))
	case ctx.Err() == nil:
		l.enqueueErrs.Add(1)
	}
}
