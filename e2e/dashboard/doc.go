// Package dashboard holds the dashboard's (hopperui's) browser tests: each page loaded in
// headless chromium driven by chromedp, with the console watched for errors, exceptions and
// CSP violations; search, live progress, the forms that change the store, API-key sessions,
// and job data that must stay text. TestScreenshots retakes docs/dashboard/*.png.
//
// They live in the e2e module (its own go.mod), so chromedp stays out of the hopper module's
// requirements. Without chromium they skip, except under CI=true, where they fail. From the
// repository's root:
//
//	make e2e           # these tests (cd e2e && go test -race -count=1 ./...)
//	make screenshots   # the screenshots in docs/dashboard/
package dashboard
