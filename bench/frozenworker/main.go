// Command frozenworker measures what a frozen remote worker costs the jobs pushed to it: it
// starts --workers worker processes (itself, with -child), each a Go remote worker in stream
// mode on one fresh queue of a running `hopper serve`, enqueues --rate jobs a second for
// --duration, freezes the first worker (SIGSTOP) at --freeze-at for --freeze, then wakes it
// (SIGCONT). It prints, per worker, the jobs it ran and their enqueue→start latency (p50, p99,
// max), the jobs that waited over a second, and the server's push counters
// (hopper_stream_push_failed_total, hopper_stream_push_rerouted_total). See
// docs/benchmarks.md, "A frozen worker".
//
//	hopper serve --database /tmp/frozen.db &
//	go run ./bench/frozenworker --server http://127.0.0.1:7070
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/remote"
)

// ping is a job that carries its enqueue time.
type ping struct {
	Sent int64 `json:"sent"`
}

func (ping) Kind() string { return "frozen-ping" }

type options struct {
	server, queue                    string
	workers, concurrency, rate       int
	duration, freezeAt, freeze, work time.Duration
	child                            bool
	name                             string
}

func main() {
	var o options
	flag.StringVar(&o.server, "server", "http://127.0.0.1:7070", "the server's URL")
	flag.IntVar(&o.workers, "workers", 4, "worker processes")
	flag.IntVar(&o.concurrency, "concurrency", 8, "each worker's concurrency (its stream's credit)")
	flag.IntVar(&o.rate, "rate", 200, "jobs enqueued a second")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long jobs are enqueued")
	flag.DurationVar(&o.freezeAt, "freeze-at", 5*time.Second, "when the first worker is frozen")
	flag.DurationVar(&o.freeze, "freeze", 10*time.Second, "how long it stays frozen")
	flag.DurationVar(&o.work, "work", 20*time.Millisecond, "how long each job takes")
	flag.BoolVar(&o.child, "child", false, "run as one worker process (internal)")
	flag.StringVar(&o.queue, "queue", "", "the queue (internal)")
	flag.StringVar(&o.name, "name", "", "the worker's name (internal)")
	flag.Parse()
	if o.child {
		if err := work(o); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := measure(o); err != nil {
		log.Fatal(err)
	}
}

// work runs one worker until stdin closes, printing "latency_ns" for each job it starts.
func work(o options) error {
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[ping]) error {
		mu.Lock()
		fmt.Fprintln(out, time.Now().UnixNano()-job.Args.Sent)
		out.Flush()
		mu.Unlock()
		select {
		case <-time.After(o.work):
		case <-ctx.Done():
		}
		return nil
	})
	w, err := remote.New(remote.Config{URL: o.server, APIKey: os.Getenv("HOPPER_API_KEY"), Workers: ws, Queue: o.queue,
		Concurrency: o.concurrency, Name: o.name})
	if err != nil {
		return err
	}
	if err := w.Start(context.Background()); err != nil {
		return err
	}
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // the parent closes it to stop us
	return w.Stop(context.Background())
}

// worker is one child process and the latencies it reported.
type worker struct {
	cmd   *exec.Cmd
	stdin io.Closer
	mu    sync.Mutex
	lat   []time.Duration
	done  chan struct{}
}

func (w *worker) latencies() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lat)
}

func measure(o options) error {
	ctx := context.Background()
	o.queue = fmt.Sprintf("frozen-%d", time.Now().UnixNano())
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ws := make([]*worker, o.workers)
	for i := range ws {
		if ws[i], err = spawn(self, o, i); err != nil {
			return err
		}
	}
	defer func() {
		for _, w := range ws {
			w.cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck // it may have gone
			w.stdin.Close()
			<-w.done
			w.cmd.Wait() //nolint:errcheck // its exit status says nothing we use
		}
	}()
	client, err := hopperclient.New(hopperclient.Config{URL: o.server, APIKey: os.Getenv("HOPPER_API_KEY")})
	if err != nil {
		return err
	}
	time.Sleep(time.Second) // the workers' streams open
	frozen := ws[0].cmd.Process
	freeze := time.AfterFunc(o.freezeAt, func() { frozen.Signal(syscall.SIGSTOP) })        //nolint:errcheck
	thaw := time.AfterFunc(o.freezeAt+o.freeze, func() { frozen.Signal(syscall.SIGCONT) }) //nolint:errcheck
	defer freeze.Stop()
	defer thaw.Stop()
	n := int(o.duration.Seconds() * float64(o.rate))
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	for range n {
		<-tick.C
		if _, err := client.Enqueue(ctx, ping{Sent: time.Now().UnixNano()}, &hopper.InsertOpts{Queue: o.queue}); err != nil {
			return err
		}
	}
	tick.Stop()
	deadline := time.Now().Add(o.freezeAt + o.freeze + time.Minute)
	for total(ws) < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	report(os.Stdout, o, ws, n)
	return pushCounters(os.Stdout, o.server)
}

func spawn(self string, o options, i int) (*worker, error) {
	cmd := exec.Command(self, "-child", "-server", o.server, "-queue", o.queue, "-name", "frozen-"+strconv.Itoa(i),
		"-concurrency", strconv.Itoa(o.concurrency), "-work", o.work.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ns, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
				w.mu.Lock()
				w.lat = append(w.lat, time.Duration(ns))
				w.mu.Unlock()
			}
		}
	}()
	return w, nil
}

func total(ws []*worker) int {
	n := 0
	for _, w := range ws {
		n += len(w.latencies())
	}
	return n
}

func report(out io.Writer, o options, ws []*worker, n int) {
	fmt.Fprintf(out, "%d jobs at %d/s over %s, %d workers of concurrency %d, %s jobs; worker 0 frozen from %s for %s\n",
		n, o.rate, o.duration, o.workers, o.concurrency, o.work, o.freezeAt, o.freeze)
	fmt.Fprintf(out, "%-8s %6s %9s %9s %9s %12s\n", "worker", "jobs", "p50", "p99", "max", "waited >1s")
	for i, w := range ws {
		lat := w.latencies()
		slices.Sort(lat)
		slow := len(lat) - slices.IndexFunc(lat, func(d time.Duration) bool { return d > time.Second })
		if slices.IndexFunc(lat, func(d time.Duration) bool { return d > time.Second }) < 0 {
			slow = 0
		}
		fmt.Fprintf(out, "%-8d %6d %9s %9s %9s %12d\n", i, len(lat), pct(lat, .5), pct(lat, .99), pct(lat, 1), slow)
	}
	fmt.Fprintf(out, "ran %d of %d jobs\n", total(ws), n)
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(float64(len(sorted))*p), len(sorted)-1)].Round(time.Millisecond)
}

// pushCounters prints the server's push counters from /metrics.
func pushCounters(out io.Writer, server string) error {
	resp, err := http.Get(server + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "hopper_stream_push_") {
			fmt.Fprintln(out, line)
		}
	}
	return sc.Err()
}
