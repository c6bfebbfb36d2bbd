package hopperprom_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/prometheus/client_golang/prometheus"
)

// Resize is the payload of a resize job.
type Resize struct {
	Width int `json:"width"`
}

// Kind names the worker that runs the job.
func (Resize) Kind() string { return "resize" }

// A program that embeds Hopper gets hopper serve's job metrics by giving a Metrics to its
// client as an observer and registering it with its Prometheus registry (served by
// promhttp.HandlerFor, say).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopper-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(dir, "hopper.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	metrics := hopperprom.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)

	done := make(chan struct{})
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Resize]) error {
		defer close(done)
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers,
		Observers: []hopper.Observer{metrics}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, Resize{Width: 640}, nil); err != nil {
		log.Fatal(err)
	}
	<-done
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil { // writes the last outcomes
		log.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "hopper_jobs_completed_total" {
			for _, m := range f.GetMetric() {
				fmt.Println(f.GetName(), m.GetLabel()[0].GetValue(), m.GetLabel()[1].GetValue(), m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// hopper_jobs_completed_total resize default 1
}
