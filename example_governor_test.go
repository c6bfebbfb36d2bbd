package hopper_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// A worker process with a resource governor claims no new job while it uses 80 % of the CPU
// available to it (its cgroup's quota, or the machine's CPUs) or 2 GiB of memory; running
// jobs go on. Queues whose every live worker is held show their queued jobs as awaiting
// compute.
func ExampleConfig_resourceGovernor() {
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
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SendInvoice]) error { return nil })
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, MaxCPU: 0.8, MaxMemory: 2 << 30})
	if err != nil {
		log.Fatal(err) // hopper.ErrGovernorUnsupported off Linux
	}
	gov := client.Governor()
	fmt.Printf("governor: max CPU %.0f%%, max memory %d MiB\n", gov.MaxCPU*100, gov.MaxMemory>>20)

	if _, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 7}, nil); err != nil {
		log.Fatal(err)
	}
	queues, err := client.Queues(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range queues {
		// Nothing works the queue yet (the client is not started): its job awaits compute, and
		// no governor holds the queue back.
		fmt.Printf("%s: %d awaiting compute, %d computing, held by governor: %v\n", q.Name, q.AwaitingCompute,
			q.Computing, q.HeldByGovernor)
	}
	// Output:
	// governor: max CPU 80%, max memory 2048 MiB
	// default: 1 awaiting compute, 0 computing, held by governor: false
}
