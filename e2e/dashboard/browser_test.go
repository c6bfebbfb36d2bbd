package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The browser tests drive Debian's chromium, headless, through chromedp: one browser for the
// whole package, started on first use, and a fresh browser context (cookies, storage) per
// tab. Without chromium they skip, except under CI=true, where they fail (as the PostgreSQL
// tests do); HOPPER_CHROMIUM names another binary.

var browser struct {
	once   sync.Once
	path   string
	ctx    context.Context // the browser; tabs derive from it
	cancel func()
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel() // ends chromium and chromedp's goroutines
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// chromiumPath finds the browser: HOPPER_CHROMIUM, else chromium on the PATH.
func chromiumPath() string {
	if p := os.Getenv("HOPPER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts chromium once. The flags keep it from reaching out to the network
// (component updates, sync, QUIC), which on a closed network makes it refuse connections.
func startBrowser() {
	browser.path = chromiumPath()
	if browser.path == "" {
		browser.err = fmt.Errorf("chromium not found (apt-get install chromium, or set HOPPER_CHROMIUM)")
		return
	}
	dir, err := os.MkdirTemp("", "hopperui-chromium-")
	if err != nil {
		browser.err = err
		return
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser.path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000))
	ctx, cancelBrowser := chromedp.NewContext(alloc)
	browser.ctx = ctx
	browser.cancel = func() {
		cancelBrowser()
		cancelAlloc()
		os.RemoveAll(dir)
	}
	// The first call starts the process; it must have no timeout of its own (chromedp ties the
	// browser's life to it).
	browser.err = chromedp.Do(ctx)
}

// needBrowser skips t without chromium, or fails it under CI=true.
func needBrowser(t *testing.T) {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the dashboard's browser tests need chromium in CI: %v", browser.err)
	}
	t.Skipf("no browser: %v", browser.err)
}

// tab is one page of the browser, in a browser context of its own (cookies, storage), with
// what its console reported.
type tab struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	log []string // console errors and warnings, exceptions, CSP violations
}

// newTab opens a tab; it closes when the test ends.
func newTab(t *testing.T) *tab {
	t.Helper()
	needBrowser(t)
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	done := make(chan struct{})
	go func() { // ends when the tab's context does
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException, "assert":
				tb.record(string(m.Type) + ": " + m.Text + " " + m.URL)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return tb
}

func (tb *tab) record(s string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.log = append(tb.log, s)
}

// consoleErrors returns what the console reported since the last call.
func (tb *tab) consoleErrors() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := tb.log
	tb.log = nil
	return out
}

// run runs actions in the tab, failing the test on an error or after 30 s.
func (tb *tab) run(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v (console: %q)", err, tb.consoleErrors())
	}
}

// get runs one action that returns a value.
func get[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.t.Fatalf("browser: %v (console: %q)", err, tb.consoleErrors())
	}
	return v
}

// open loads url and waits until the page's main content is there.
func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.run(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("main")))
}

// text is the text content of the first element matching sel.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return strings.TrimSpace(get(tb, chromedp.TextContent(chromedp.CSS(sel))))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	return get(tb, chromedp.Evaluate[T](expr))
}

// await evaluates a JavaScript expression whose value is a promise, and returns what it
// resolves to.
func await[T any](tb *tab, expr string) T {
	tb.t.Helper()
	return get(tb, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// click clicks sel and waits for the page it leads to: the current page is marked, and the
// click has led somewhere once a page without the mark has loaded.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	eval[bool](tb, `window.hopperStale = true`)
	tb.run(chromedp.Click(chromedp.CSS(sel)))
	if !tb.until(`!window.hopperStale && document.readyState === "complete" && document.querySelector("main") !== null`) {
		tb.t.Fatalf("click %s led to no new page (console: %q)", sel, tb.consoleErrors())
	}
}

// until evaluates cond until it is true, for at most 20 s, through navigations (an
// evaluation that a navigation interrupts counts as false). It polls from here, every 20 ms
// of real time, as the page changes in a real browser: chromedp.Poll evaluates in the page,
// and a navigation ends it.
func (tb *tab) until(cond string) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// waitText waits until sel's text is want: the page may change it by itself (htmx).
func (tb *tab) waitText(sel, want string) {
	tb.t.Helper()
	cond := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e !== null && e.textContent.trim() === %q })()`, sel, want)
	if !tb.until(cond) {
		got, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
		tb.t.Fatalf("%s: text %q, want %q", sel, strings.TrimSpace(got), want)
	}
}

// expectBadRequest waits for the console's report of the 400 answer a bad input got, and
// takes it (with nothing else) off the console's record.
func (tb *tab) expectBadRequest() { tb.t.Helper(); tb.expectStatus(http.StatusBadRequest) }

// expectStatus waits for the console's report of an answer with status code (the browser
// reports 4xx answers), and takes it, with nothing else, off the console's record.
func (tb *tab) expectStatus(code int) {
	tb.t.Helper()
	var got []string
	require.Eventually(tb.t, func() bool {
		got = append(got, tb.consoleErrors()...)
		return len(got) > 0
	}, 5*time.Second, 10*time.Millisecond, "the console reports the %d", code)
	for _, m := range got {
		require.Contains(tb.t, m, fmt.Sprintf("status of %d", code))
	}
}

type chromedpAction = chromedp.Action[chromedp.Void]

func setValue(sel, v string) chromedpAction { return chromedp.SetValue(chromedp.CSS(sel), v) }

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
