package hopperui_test

import (
	"context"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

type charge struct{}

func (charge) Kind() string { return "charge" }

// A job that failed with a business error and a checkpoint shows both on its page: the code
// beside the last error and on its attempt, the checkpoint for whoever resolves it.
func TestJobPageShowsErrorCodeAndCheckpoint(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, &uitest.Opts{Workers: func(ws *hopper.Workers, _ *uitest.Env) {
		hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[charge]) error {
			return hopper.FailWithCheckpoint(hopper.BusinessError{Code: "card_declined", Message: "no <funds>"},
				map[string]int{"step": 2})
		})
	}})
	job := e.Enqueue(t, charge{}, nil)
	e.WaitState(t, job.ID, hopper.StateFailed)
	body := page(t, e.URL+"/jobs/"+job.ID)
	require.Contains(t, body, `<p id="error-code">Business error <code>card_declined</code>.</p>`)
	require.Contains(t, body, `card_declined: no &lt;funds&gt;`)
	require.Contains(t, body, `<code class="error-code">card_declined</code>`)
	require.Regexp(t, `(?s)<pre id="checkpoint">.*&#34;step&#34;: 2`, body)
}
