package hopperui_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The dashboard's tests here use plain HTTP; its browser tests are in e2e/dashboard, a module
// of its own so that chromedp stays out of this module's requirements.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
