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

// RenderPreview renders a document's preview at one revision; only the newest matters.
type RenderPreview struct {
	Rev int `json:"rev"`
}

func (RenderPreview) Kind() string { return "render-preview" }

// CompactKind replaces the jobs that wait in a group by one job: with MergeReplace it takes the
// newest job's args, and the jobs it replaced end canceled, their lineage kept both ways.
func ExampleClient_CompactKind() {
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
	client, err := hopper.NewClient(hopper.Config{Store: st}) // enqueue-only: the jobs wait
	if err != nil {
		log.Fatal(err)
	}

	var first string
	for rev := 1; rev <= 3; rev++ {
		res, err := client.Enqueue(ctx, RenderPreview{Rev: rev}, &hopper.InsertOpts{GroupKey: "doc-7"})
		if err != nil {
			log.Fatal(err)
		}
		if first == "" {
			first = res.Job.ID
		}
	}
	res, err := client.CompactKind(ctx, "render-preview", &hopper.CompactOpts{Merge: hopper.MergeReplace})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("groups:", res.Groups, "jobs replaced:", res.Jobs)
	job, err := client.Get(ctx, res.Compacted[0].NewJobID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, string(job.Args), job.GroupKey)
	old, err := client.Get(ctx, first)
	if err != nil {
		log.Fatal(err)
	}
	into, err := client.CompactedInto(ctx, first)
	if err != nil {
		log.Fatal(err)
	}
	from, err := client.CompactedFrom(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(old.State, into == job.ID, len(from))
	// Output:
	// groups: 1 jobs replaced: 3
	// queued {"rev":3} doc-7
	// canceled true 3
}
