package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/pgstore"
)

// Environment of a worker process.
const (
	envRole   = "HOPPER_CLUSTER_ROLE"
	envSchema = "HOPPER_CLUSTER_SCHEMA"
	envID     = "HOPPER_CLUSTER_ID"
	envLog    = "HOPPER_CLUSTER_LOG"
)

type clusterJob struct {
	SleepMS int `json:"sleep_ms"`
}

func (clusterJob) Kind() string { return "cluster-job" }

// workerMain is a worker process: it works jobs until SIGTERM, logging each handler run (one
// unbuffered write, so a SIGKILL loses none) for the test to count.
func workerMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := work(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func work(ctx context.Context) error {
	log, err := os.OpenFile(os.Getenv(envLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	st, err := pgstore.Open(ctx, pgstore.Config{URL: pgtest.URL(), Schema: os.Getenv(envSchema), MaxConns: 6})
	if err != nil {
		return err
	}
	defer st.Close()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[clusterJob]) error {
		if _, err := log.WriteString(job.ID + "\n"); err != nil {
			return err
		}
		// Real work in a real process: jobs are still running on the node the test kills.
		time.Sleep(time.Duration(job.Args.SleepMS) * time.Millisecond)
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{
		Store: st, Workers: ws, WorkerID: os.Getenv(envID), MaxWorkers: 20,
		LeaderTTL: leaderTTL, NodeTTL: nodeTTL, RescueInterval: 500 * time.Millisecond,
		LeaseDuration: 30 * time.Second, PollInterval: 200 * time.Millisecond,
		// Warnings (a failed claim, a lost lease) reach the test's output, so that a failure
		// says what the workers saw.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("worker", os.Getenv(envID)),
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}
