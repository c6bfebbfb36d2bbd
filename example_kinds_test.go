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

// Disabling a kind holds its jobs in their queues, on every process sharing the store, until
// it is enabled: while a downstream service is down, say. Enqueues still succeed; the queue
// listing counts the held jobs as disabled.
func ExampleClient_DisableKind() {
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
	client, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}

	if err := client.DisableKind(ctx, "send-invoice"); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 42}, nil); err != nil {
		log.Fatal(err)
	}
	queues, err := client.Queues(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(queues[0].Name, "queued:", queues[0].Counts[hopper.StateQueued], "disabled:", queues[0].Disabled)
	kinds, err := client.Kinds(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(kinds[0].Name, "disabled:", kinds[0].Disabled)

	if err := client.EnableKind(ctx, "send-invoice"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// default queued: 1 disabled: 1
	// send-invoice disabled: true
}

// KindConcurrency bounds a kind in one process: here at most 2 send-invoice jobs run at once
// while the other 18 slots run other kinds. A saturated kind is left out of this process's
// claims, so its jobs wait in the queue for this process or another.
func ExampleConfig_kindConcurrency() {
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
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[SendInvoice]) error { return nil })
	_, err = hopper.NewClient(hopper.Config{Store: st, Workers: ws, MaxWorkers: 20,
		KindConcurrency: map[string]int{"send-invoice": 2}})
	fmt.Println(err)
	_, err = hopper.NewClient(hopper.Config{Store: st, Workers: ws, KindConcurrency: map[string]int{"send-invoice": 0}})
	fmt.Println(err)
	// Output:
	// <nil>
	// invalid Config.KindConcurrency[send-invoice]: 0 is under 1
}
