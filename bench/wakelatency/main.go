// Command wakelatency measures enqueue→start latency across processes on PostgreSQL, where a
// worker hears of a job only through the store's NOTIFY: an enqueue-only client and a worker
// client, each on its own store (pool, wake-up pacing, LISTEN), share a fresh schema, which is
// dropped afterwards. Jobs are enqueued one at a time at --rate; the latency runs from just
// before Enqueue to the handler's start. --wake sets pgstore.Config.WakeInterval (negative:
// every enqueue notifies). See docs/benchmarks.md.
//
//	go run ./bench/wakelatency --wake -1ns --rate 200 --n 2000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/jackc/pgx/v5"
)

type Ping struct {
	Sent int64 `json:"sent"`
}

func (Ping) Kind() string { return "ping" }

func main() {
	url := flag.String("url", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL URL")
	wake := flag.Duration("wake", 0, "pgstore.Config.WakeInterval of both stores (0: the default; negative: notify every enqueue)")
	rate := flag.Int("rate", 200, "enqueues per second")
	n := flag.Int("n", 2000, "jobs")
	flag.Parse()
	ctx := context.Background()
	schema := new(string)
	*schema = fmt.Sprintf("hopper_wakelatency_%d", time.Now().UnixNano())
	defer func() {
		conn, err := pgx.Connect(ctx, *url)
		if err != nil {
			log.Printf("drop schema %s: %v", *schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{*schema}.Sanitize()+" CASCADE"); err != nil {
			log.Printf("drop schema %s: %v", *schema, err)
		}
	}()
	st1, err := pgstore.Open(ctx, pgstore.Config{URL: *url, Schema: *schema, WakeInterval: *wake})
	if err != nil {
		log.Fatal(err)
	}
	defer st1.Close()
	st2, err := pgstore.Open(ctx, pgstore.Config{URL: *url, Schema: *schema, WakeInterval: *wake})
	if err != nil {
		log.Fatal(err)
	}
	defer st2.Close()
	var mu sync.Mutex
	var lat []time.Duration
	done := make(chan struct{})
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Ping]) error {
		d := time.Since(time.Unix(0, job.Args.Sent))
		mu.Lock()
		lat = append(lat, d)
		if len(lat) == *n {
			close(done)
		}
		mu.Unlock()
		return nil
	})
	c1, err := hopper.NewClient(hopper.Config{Store: st1})
	if err != nil {
		log.Fatal(err)
	}
	c2, err := hopper.NewClient(hopper.Config{Store: st2, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	if err := c1.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if err := c2.Start(ctx); err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Second)
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	for range *n {
		<-tick.C
		if _, err := c1.Enqueue(ctx, Ping{Sent: time.Now().UnixNano()}, nil); err != nil {
			log.Fatal(err)
		}
	}
	<-done
	c1.Stop(ctx)
	c2.Stop(ctx)
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	fmt.Printf("wake=%v rate=%d n=%d p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms\n", *wake, *rate, *n, q(0.5), q(0.9), q(0.99), q(1))
}
