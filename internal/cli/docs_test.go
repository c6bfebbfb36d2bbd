package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	hstore "github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// The outputs shown in the docs are the hopper command's own. A generated part of a doc is a
// comment that lists commands, followed by a text block:
//
//	<!-- make docs-cli runs:
//	hopper jobs ls --state failed
//	-->
//	```text
//	$ hopper jobs ls --state failed
//	ID  KIND  …
//	```
//
// TestDocsShowTheRealOutput runs each command in process, as the binary would, on a database
// holding a few jobs (docFixture), and fails when a block is not what the commands print now;
// `make docs-cli` (-update-docs) rewrites the blocks. What differs from run to run (job ids,
// times, ages, the temporary directory) is replaced by stable stand-ins (docNormalizer).

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated parts of the docs (make docs-cli)")

// docFiles hold generated parts or schema versions (docVersions), relative to this package.
var docFiles = []string{"../../docs/cli.md", "../../docs/dead-letters.md", "../../docs/storage.md", "../../docs/development.md",
	"../../docs/server.md"}

// docVersions are the schema versions the docs quote, with what they must read.
var docVersions = []struct {
	re   *regexp.Regexp
	repl func() string
}{
	{regexp.MustCompile(`(postgres schema \w+: schema version )\d+`),
		func() string { return fmt.Sprintf("${1}%d", postgres.LatestVersion()) }},
	{regexp.MustCompile(`(\.db: schema version )\d+`), func() string { return fmt.Sprintf("${1}%d", sqlite.LatestVersion()) }},
	// A SQLite server's, as `hopper version --server`, /readyz's JSON and ServerService.Info
	// say it, and a backup's.
	{regexp.MustCompile(`(store sqlite, schema version |"store":"sqlite","schema_?[vV]ersion":|MiB, schema version )\d+`),
		func() string { return fmt.Sprintf("${1}%d", sqlite.LatestVersion()) }},
	{regexp.MustCompile(`(has schema version )\d+(, newer than this binary's )\d+`),
		func() string { return fmt.Sprintf("${1}%d${2}%d", sqlite.LatestVersion()+1, sqlite.LatestVersion()) }},
}

// docRegion is a generated part: the comment naming its commands, then its text block.
var docRegion = regexp.MustCompile("(?s)(<!-- make docs-cli runs:\n(.*?)\n-->\n)```text\n.*?```\n")

func TestDocsShowTheRealOutput(t *testing.T) {
	for _, path := range docFiles {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		got := generateDocs(t, string(raw))
		require.True(t, docRegion.Match(raw) || quotesVersion(raw), "%s has nothing generated nor a schema version", path)
		if *updateDocs {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			continue
		}
		if got != string(raw) {
			want, have := docRegion.FindAllString(got, -1), docRegion.FindAllString(string(raw), -1)
			for i := range want {
				if i >= len(have) || want[i] != have[i] {
					t.Fatalf("%s is stale: run make docs-cli. The hopper command now prints\n%s", path, want[i])
				}
			}
			t.Fatalf("%s is stale: run make docs-cli", path)
		}
	}
}

// generateDocs returns doc with each generated part filled from the commands it names, run in
// order on one fresh fixture.
func generateDocs(t *testing.T, doc string) string {
	t.Helper()
	dir := t.TempDir()
	names := docFixture(t, dir)
	norm := newDocNormalizer(dir)
	doc = docRegion.ReplaceAllStringFunc(doc, func(region string) string {
		m := docRegion.FindStringSubmatch(region)
		var out strings.Builder
		for line := range strings.SplitSeq(m[2], "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			for name, id := range names {
				line = strings.ReplaceAll(line, "{"+name+"}", id)
			}
			args := splitCommand(t, line)
			require.Equal(t, "hopper", args[0], "a generated part runs hopper: %q", line)
			var buf bytes.Buffer
			run(t.Context(), append([]string{"--database", dir + "/doc.db"}, args[1:]...), strings.NewReader(""), &buf, &buf)
			fmt.Fprintf(&out, "$ %s\n%s", line, buf.String())
		}
		return m[1] + "```text\n" + norm.apply(out.String()) + "```\n"
	})
	for _, v := range docVersions {
		doc = v.re.ReplaceAllString(doc, v.repl())
	}
	return doc
}

// quotesVersion reports whether doc quotes a schema version docVersions checks.
func quotesVersion(doc []byte) bool {
	for _, v := range docVersions {
		if v.re.Match(doc) {
			return true
		}
	}
	return false
}

// docFixture fills dir/doc.db with jobs to show, and returns their ids by name for the
// commands ({invoice} is the id of the job named invoice): a queued invoice, a report
// scheduled for 10 minutes later, a sent email, two card charges that failed and a refund that
// failed and was replayed (refund, refund-replay).
func docFixture(t *testing.T, dir string) map[string]string {
	t.Helper()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: dir + "/doc.db"})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	c, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true, WorkerID: "doc-worker"})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	defer stoptest.Within(t, c, 10*time.Second)
	names := map[string]string{}
	enqueue := func(name, kind, args string, opts *hopper.InsertOpts) string {
		res, err := c.Enqueue(ctx, hopper.RawArgs{KindName: kind, JSON: []byte(args)}, opts)
		require.NoError(t, err)
		names[name] = res.Job.ID
		return res.Job.ID
	}
	work := workerapi.Of(c)
	activate := func(queue string) *hopper.JobRow {
		jobs, err := work.Activate(ctx, workerapi.ActivateParams{Worker: "doc-worker", Queue: queue})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		return jobs[0]
	}
	fail := func(name, kind, args, msg string) {
		id := enqueue(name, kind, args, &hopper.InsertOpts{Queue: "billing"})
		job := activate("billing")
		zero := 0
		_, err := work.FailJob(ctx, id, job.Token, workerapi.FailParams{Error: msg, RetriesLeft: &zero})
		require.NoError(t, err)
	}

	id := enqueue("email", "send-email", `{"to": "ada@example.com"}`, &hopper.InsertOpts{Queue: "mail"})
	require.NoError(t, work.CompleteJob(ctx, id, activate("mail").Token, json.RawMessage(`{"sent": true}`)))
	fail("charge1", "charge-card", `{"order_id": 7}`, "card declined: insufficient funds")
	fail("charge2", "charge-card", `{"order_id": 8}`, "card declined: insufficient funds")
	fail("refund", "refund", `{"order_id": 3}`, "payment provider rejected the refund")
	replay, err := c.Replay(ctx, names["refund"], "alice")
	require.NoError(t, err)
	names["refund-replay"] = replay.ID
	enqueue("report", "build-report", `{}`, &hopper.InsertOpts{Queue: "reports", Delay: 10 * time.Minute})
	enqueue("invoice", "send-invoice", `{"invoice_id": 42}`, nil)
	return names
}

// splitCommand splits a command line into words as a shell would, for the quotes a doc uses
// ('…' and "…", no escapes).
func splitCommand(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	require.Zero(t, quote, "unbalanced quote in %q", line)
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// docBase is when the jobs of the docs were made.
var docBase = time.Date(2026, 11, 24, 6, 2, 47, 102379000, time.UTC)

// docNormalizer replaces what differs from run to run by stand-ins of the same length, so that
// tables stay aligned: each job id by an id of its own, each time by docBase plus its offset
// from the first time seen (in whole minutes: a delay shows, the milliseconds between two
// commands do not), ages by 42s, and the temporary directory by /tmp.
type docNormalizer struct {
	dir   string
	ids   map[string]string
	first time.Time
}

func newDocNormalizer(dir string) *docNormalizer {
	return &docNormalizer{dir: dir, ids: map[string]string{}}
}

var (
	docUUID   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`)
	docCursor = regexp.MustCompile(`(--cursor |"nextCursor": ")([A-Za-z0-9_-]{20,})`)
	docAge    = regexp.MustCompile(`\([0-9][0-9.hmsµ]* ago\)|("oldest_age": ")[^"]+|("oldest_age_seconds": )[0-9.e+-]+`)
	// docTime matches the times the command prints: in the API's JSON and the CLI's, in
	// tables, in details (one expression: a time replaced is not matched again).
	docTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|` +
		`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [A-Z]+`)
)

func (n *docNormalizer) apply(s string) string {
	s = strings.ReplaceAll(s, n.dir, "/tmp")
	s = docCursor.ReplaceAllStringFunc(s, func(m string) string {
		sub := docCursor.FindStringSubmatch(m)
		id, err := hstore.DecodeCursor(sub[2])
		if err != nil {
			return m
		}
		return sub[1] + hstore.EncodeCursor(n.id(id))
	})
	s = docUUID.ReplaceAllStringFunc(s, n.id)
	s = docTime.ReplaceAllStringFunc(s, n.time)
	return docAge.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case strings.HasPrefix(m, `"oldest_age": "`):
			return `"oldest_age": "42s`
		case strings.HasPrefix(m, `"oldest_age_seconds": `):
			return `"oldest_age_seconds": 42`
		}
		return "(42s ago)"
	})
}

// time is the stand-in of a time printed as m, in m's layout.
func (n *docNormalizer) time(m string) string {
	layout := tableTime
	switch {
	case strings.HasSuffix(m, "Z") && strings.Contains(m, "."):
		layout = time.RFC3339Nano
	case strings.HasSuffix(m, "Z"):
		layout = time.RFC3339
	case strings.Contains(m, " "):
		layout = detailTime
	}
	at, err := time.ParseInLocation(layout, m, time.Local)
	if err != nil {
		return m
	}
	if n.first.IsZero() {
		n.first = at
	}
	doc := docBase.Add(at.Sub(n.first).Round(time.Minute))
	switch layout {
	case tableTime:
		return doc.Format(layout) // local time in the table: the docs' is UTC
	case time.RFC3339Nano:
		// Always six digits: the API prints 3, 6 or 9, as the time's trailing zeros allow.
		return doc.Format("2006-01-02T15:04:05.000000Z")
	}
	return doc.In(time.UTC).Format(layout)
}

// id is the stand-in of a job id: a UUIDv7 of the docs' time, the same for one id throughout
// a doc.
func (n *docNormalizer) id(real string) string {
	if doc, ok := n.ids[real]; ok {
		return doc
	}
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(len(n.ids)))))
	doc := "01a20c26-4fbe-7" + h[:3] + "-8" + h[3:6] + "-" + h[6:18]
	n.ids[real] = doc
	return doc
}
