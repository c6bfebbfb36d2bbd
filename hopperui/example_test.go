package hopperui_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// A program mounts the dashboard in its own server, here read-only under /admin/jobs/ (behind
// the program's own authentication in real life: without Config.Auth the handler lets every
// request in).
func ExampleNew() {
	dir, err := os.MkdirTemp("", "hopperui-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{Path: filepath.Join(dir, "hopper.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}

	ui, err := hopperui.New(hopperui.Config{Client: client, Prefix: "/admin/jobs", ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/jobs/", ui)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/jobs/queues", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), "<h1>Queues</h1>"))
	// Output: 200 true
}
