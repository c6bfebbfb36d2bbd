package hopper_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// An idempotency key makes an enqueue safe to retry: the same key and payload return the job
// enqueued the first time (and its result once it has one); the same key with another payload
// is refused. Keys de-duplicate for their retention (24 h unless set).
func ExampleInsertOpts_idempotencyKey() {
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

	opts := &hopper.InsertOpts{IdempotencyKey: "invoice-42-email"}
	first, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 42}, opts)
	if err != nil {
		log.Fatal(err)
	}
	again, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 42}, opts) // a retried request
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same job:", again.Job.ID == first.Job.ID, "existing:", again.Existing)

	_, err = client.Enqueue(ctx, SendInvoice{InvoiceID: 43}, opts) // a bug: the key reused
	fmt.Println("other payload refused:", errors.Is(err, hopper.ErrDuplicate))
	// Output:
	// same job: true existing: true
	// other payload refused: true
}
