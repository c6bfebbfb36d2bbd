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

// Transcode jobs run for hours on machines that get preempted: losing the worker is not their
// fault, so the kind allows more rescues than the client's default.
type Transcode struct {
	Video string `json:"video"`
}

func (Transcode) Kind() string { return "transcode" }

func (Transcode) InsertOpts() hopper.InsertOpts { return hopper.InsertOpts{MaxRescues: 20} }

// A job whose worker is lost (a crash, a hang) is rescued without using an attempt, at most
// MaxRescues times; the loss after that fails it with outcome worker_lost, a dead letter. The
// bound comes from the job's options, else its kind's, else the client's (default 3).
func ExampleInsertOpts_maxRescues() {
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
	client, err := hopper.NewClient(hopper.Config{Store: st}) // MaxRescues: 3 by default
	if err != nil {
		log.Fatal(err)
	}

	invoice, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 42}, nil)
	if err != nil {
		log.Fatal(err)
	}
	video, err := client.Enqueue(ctx, Transcode{Video: "talk.mp4"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	forever, err := client.Enqueue(ctx, Transcode{Video: "keynote.mp4"}, &hopper.InsertOpts{MaxRescues: hopper.UnlimitedRescues})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("invoice:", invoice.Job.MaxRescues, "video:", video.Job.MaxRescues, "keynote:", forever.Job.MaxRescues)
	// Output:
	// invoice: 3 video: 20 keynote: -1
}
