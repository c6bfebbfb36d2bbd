package hopperclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/servertest"
)

// SendEmail is the payload of a job the server's workers (or remote workers) run.
type SendEmail struct {
	To string `json:"to"`
}

// Kind names the job's worker.
func (SendEmail) Kind() string { return "send-email" }

// A Go program talks to a running server (hopper serve) with the types of package hopper.
func Example() {
	srv := startServer(nil) // a server in this process; yours is `hopper serve`
	defer srv.Close()
	ctx := context.Background()

	client, err := hopperclient.New(hopperclient.Config{URL: srv.URL, APIKey: srv.AdminKey})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &hopper.InsertOpts{Queue: "mail", MaxAttempts: 5})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Kind, job.Queue, job.State, job.MaxAttempts, string(job.Args))

	_, err = client.Get(ctx, "01a20c25-204c-75dd-9586-33351e006867")
	fmt.Println(errors.Is(err, hopper.ErrNotFound))
	// Output:
	// send-email mail queued 5 {"to":"ada@example.com"}
	// true
}

// A bad option is refused by the server, and the error names the field, as the library's
// would.
func ExampleClient_Enqueue() {
	srv := startServer(nil)
	defer srv.Close()
	client, err := hopperclient.New(hopperclient.Config{URL: srv.URL, APIKey: srv.AdminKey})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Enqueue(context.Background(), SendEmail{}, &hopper.InsertOpts{Priority: 5000})
	var ve *hopper.ValidationError
	if errors.As(err, &ve) {
		fmt.Println("refused:", ve.Field)
	}
	// Output: refused: priority
}

// List pages through jobs with a cursor.
func ExampleClient_List() {
	srv := startServer(nil)
	defer srv.Close()
	ctx := context.Background()
	client, err := hopperclient.New(hopperclient.Config{URL: srv.URL, APIKey: srv.AdminKey})
	if err != nil {
		log.Fatal(err)
	}
	for _, to := range []string{"ada@example.com", "grace@example.com", "alan@example.com"} {
		if _, err := client.Enqueue(ctx, SendEmail{To: to}, &hopper.InsertOpts{Queue: "mail"}); err != nil {
			log.Fatal(err)
		}
	}
	p := &hopper.ListParams{Queues: []string{"mail"}, Ascending: true, Limit: 2}
	for {
		page, err := client.List(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		for _, job := range page.Jobs {
			fmt.Println(string(job.Args))
		}
		if page.NextCursor == "" {
			break
		}
		p.Cursor = page.NextCursor
	}
	// Output:
	// {"to":"ada@example.com"}
	// {"to":"grace@example.com"}
	// {"to":"alan@example.com"}
}

// Cancel stops a job that has not ended; a job that has ended cannot be canceled.
func ExampleClient_Cancel() {
	srv := startServer(nil)
	defer srv.Close()
	ctx := context.Background()
	client, err := hopperclient.New(hopperclient.Config{URL: srv.URL, APIKey: srv.AdminKey})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, SendEmail{To: "ada@example.com"}, &hopper.InsertOpts{Delay: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Cancel(ctx, res.Job.ID, "the user unsubscribed")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State)
	_, err = client.Cancel(ctx, res.Job.ID, "")
	fmt.Println(errors.Is(err, hopper.ErrInvalidTransition))
	events, err := client.Events(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	last := events[len(events)-1]
	fmt.Println(last.From, "->", last.To, "by", last.Actor+":", last.Reason)
	// Output:
	// canceled
	// true
	// scheduled -> canceled by operator: the user unsubscribed
}

// ChargeCard fails for good on the example's server.
type ChargeCard struct {
	Order int `json:"order"`
}

// Kind names the job's worker.
func (ChargeCard) Kind() string { return "charge-card" }

// A job that failed for good is a dead letter; once its cause is fixed, a replay runs its
// work again as a new job, recorded as done by the API key's name.
func ExampleClient_Replay() {
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[ChargeCard]) error {
		return hopper.NoRetry(errors.New("card declined"))
	})
	srv := startServer(workers)
	defer srv.Close()
	ctx := context.Background()
	client, err := hopperclient.New(hopperclient.Config{URL: srv.URL, APIKey: srv.AdminKey})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.Enqueue(ctx, ChargeCard{Order: 42}, nil)
	if err != nil {
		log.Fatal(err)
	}
	waitFor(client, res.Job.ID, hopper.StateFailed)
	stats, err := client.DeadLetterStats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead letters:", stats.Count)

	job, err := client.Replay(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, job.OriginalID == res.Job.ID, job.ReplayCount, job.ReplayedBy)
	// Output:
	// dead letters: 1
	// queued true 1 admin
}

// startServer starts a server with API keys in this process, as `hopper serve` would run.
func startServer(workers *hopper.Workers) *servertest.Server {
	srv, err := servertest.Start(context.Background(), servertest.Options{Keys: true, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// waitFor waits until job id is in state want, asking the server every 10 ms (real time: the
// server works the job in real time, and an example has no test's helpers to wait with).
func waitFor(client *hopperclient.Client, id string, want hopper.JobState) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		job, err := client.Get(context.Background(), id)
		if err != nil {
			log.Fatal(err)
		}
		if job.State == want {
			return
		}
	}
	log.Fatalf("job %s never became %s", id, want)
}
