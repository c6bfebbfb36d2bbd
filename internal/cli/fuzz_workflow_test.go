package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// FuzzWorkflowFile feeds `hopper workflows enqueue` any file. It must never panic; what it
// refuses is bad input (exit 2); a workflow it reads is enqueued by a client on SQLite, which
// stores all of its steps or refuses it with a *hopper.ValidationError, never another error.
func FuzzWorkflowFile(f *testing.F) {
	for _, seed := range []string{
		albumWorkflow,
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "after": ["a"]}]}`,
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "args": [1, {"x": null}], "timeout": "1h", "priority": 3}]}`,
		`{"name": "w", "steps": [{"kind": "k"}, {"name": 7}]}`,
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "run_at": "2026-03-01T12:00:00Z", "headers": {"h": "v"}}]}`,
		`{"steps": null}`, `[]`, `{"name": "w", "steps": [{"name": "a", "kind": "k", "retry_policy": {"base": "1s"}}]}`,
		"{\"name\": \"w\", \"steps\": [{\"name\": \"\xff\", \"kind\": \"k\"}]}", ``,
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(f.TempDir(), "fuzz.db")})
	if err != nil {
		f.Fatal(err)
	}
	client, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		stoptest.Within(f, client, 10*time.Second)
		st.Close()
	})
	f.Fuzz(func(t *testing.T, file []byte) {
		wf, err := readWorkflowFile(bytes.NewReader(file), "-")
		if err != nil {
			if code := exitCode(err); code != ExitUsage {
				t.Fatalf("readWorkflowFile(%q) = %v (exit %d), want bad input", file, err, code)
			}
			return
		}
		res, err := client.EnqueueWorkflow(ctx, wf)
		if err != nil {
			if !errors.As(err, new(*hopper.ValidationError)) {
				t.Fatalf("EnqueueWorkflow of %q = %v, want a *ValidationError", file, err)
			}
			return
		}
		d, err := client.Workflow(ctx, res.Workflow.ID)
		if err != nil {
			t.Fatalf("workflow of %q: %v", file, err)
		}
		if len(d.Steps) != len(wf.Steps) {
			t.Fatalf("workflow of %q: %d steps stored of %d", file, len(d.Steps), len(wf.Steps))
		}
	})
}
