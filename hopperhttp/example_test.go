package hopperhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperhttp"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// SendEmail is the body of POST /v1/async/send-email/{tenant}, and the args of its job.
type SendEmail struct {
	To string `json:"to"`
}

// Kind names the worker that runs the job.
func (SendEmail) Kind() string { return "send-email" }

// An endpoint that answers 202 Accepted at once and sends the email in the background; the
// caller follows Location, here waiting up to 10 s for the job to end.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopperhttp-example-")
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SendEmail]) error {
		// The job's headers hold the request: route and query parameters, headers.
		tenant := job.Headers["http.path.tenant"]
		return hopper.SetResult(ctx, map[string]string{"sent_to": job.Args.To, "tenant": tenant})
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	mux := http.NewServeMux()
	mux.Handle("POST /v1/async/send-email/{tenant}", hopperhttp.AsyncHandler(client, "send-email"))
	mux.Handle("GET /v1/jobs/{id}", hopperhttp.StatusHandler(client))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/async/send-email/acme", "application/json",
		strings.NewReader(`{"to": "ada@example.com"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	resp, err = http.Get(srv.URL + resp.Header.Get("Location") + "?wait=10s")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var status struct {
		Job struct {
			State  string          `json:"state"`
			Result json.RawMessage `json:"result"`
		} `json:"job"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		log.Fatal(err)
	}
	fmt.Println(status.Job.State, string(status.Job.Result))
	// Output:
	// 202 Accepted
	// completed {"sent_to":"ada@example.com","tenant":"acme"}
}
