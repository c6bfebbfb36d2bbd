package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

type enqueueFlags struct {
	queue          string
	priority       int
	delay          time.Duration
	runAt          string
	maxAttempts    int
	maxRescues     int
	timeout        time.Duration
	idempotencyKey string
	groupKey       string
	mergeKey       string
	merge          string
	fairnessKey    string
	after          []string
	onParentFail   string
	headers        []string
	// retryBusiness sets the job's RetryPolicy.RetryBusinessErrors.
	retryBusiness bool
}

func newEnqueueCmd() *cobra.Command {
	var f enqueueFlags
	cmd := &cobra.Command{
		Use:   "enqueue KIND [JSON_ARGS]",
		Short: "Enqueue a job of KIND with JSON args (default {}; - reads them from stdin)",
		Example: `  hopper enqueue send-invoice '{"invoice_id": 42}'
  hopper enqueue --queue reports --delay 10m build-report
  hopper enqueue --merge-key user-7 --merge append send-digest '{"event": 981}'
  hopper enqueue --fairness-key customer-42 export-data '{"table": "orders"}'
  hopper enqueue --after 0192e4c1-… --after 0192e4c2-… --on-parent-failure run merge-report
  echo '{"to": "a@example.com"}' | hopper enqueue send-email -`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return runEnqueue(cmd, args, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.queue, "queue", "", "queue (default \"default\")")
	fl.IntVar(&f.priority, "priority", 0, "priority, -1000 to 1000; higher runs first")
	fl.DurationVar(&f.delay, "delay", 0, "run the job after this delay (e.g. 30s, 2h)")
	fl.StringVar(&f.runAt, "run-at", "", "run the job at this time (RFC 3339)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts before the job fails, 1 to 1000 (default 25)")
	fl.IntVar(&f.maxRescues, "max-rescues", 0, "times the job may lose its worker (crash, hang) and be requeued before it fails, 1 to 1000, or -1 for no limit (default 3)")
	fl.DurationVar(&f.timeout, "timeout", 0, "time limit of each attempt")
	fl.StringVar(&f.idempotencyKey, "idempotency-key", "", "de-duplicate enqueues with this key")
	fl.StringVar(&f.groupKey, "group-key", "", "run the job after the earlier jobs with this key, one at a time (a group, which kinds compact compacts)")
	fl.StringVar(&f.mergeKey, "merge-key", "", "merge into the job of KIND with this key that waits for its first worker, instead of adding a job")
	fl.StringVar(&f.merge, "merge", "", "what a merge does: keep (default; the waiting job stays), replace (it takes these args) or append (its args are a list of every merged enqueue's)")
	fl.StringVar(&f.fairnessKey, "fairness-key", "", "the tenant the job runs for (e.g. a customer id): claims share the queue between keys, round robin, so that one key's flood does not delay another's jobs")
	fl.StringArrayVar(&f.after, "after", nil, "wait for this job (an id; repeatable): the job waits in state waiting until every such parent has ended")
	fl.StringVar(&f.onParentFail, "on-parent-failure", "", "what a parent's failure or cancel does: cancel (default; this job and its own waiting children end canceled), run (it runs once every parent has ended) or skip (it ends canceled, but counts as succeeded for its children)")
	fl.StringArrayVar(&f.headers, "header", nil, "header as key=value (repeatable)")
	fl.BoolVar(&f.retryBusiness, "retry-business-errors", false, "retry a business error (a worker's error code) like any error while attempts are left, instead of failing the job at once")
	addJSONFlag(cmd)
	return cmd
}

func runEnqueue(cmd *cobra.Command, args []string, f *enqueueFlags) error {
	raw, err := readArgs(cmd.InOrStdin(), args)
	if err != nil {
		return err
	}
	opts, err := f.insertOpts()
	if err != nil {
		return err
	}
	return withBackend(cmd, false, func(client backend) error {
		res, err := client.Enqueue(cmd.Context(), hopper.RawArgs{KindName: args[0], JSON: raw}, opts)
		if err != nil {
			return err
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Job      apiJSON `json:"job"`
				Existing bool    `json:"existing,omitempty"`
				Merged   bool    `json:"merged,omitempty"`
			}{apiJob(res.Job), res.Existing, res.Merged})
		}
		switch {
		case res.Existing:
			fmt.Fprintln(cmd.ErrOrStderr(), "an existing job has this idempotency key; nothing was enqueued")
		case res.Merged:
			fmt.Fprintln(cmd.ErrOrStderr(), "merged into the waiting job with this merge key")
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Job.ID)
		return err
	})
}

// readArgs returns the JSON_ARGS argument: {} when absent, stdin for "-". Validating it is
// left to the client, which names the field in its error.
func readArgs(stdin io.Reader, args []string) (json.RawMessage, error) {
	if len(args) < 2 {
		return json.RawMessage("{}"), nil
	}
	if args[1] != "-" {
		return json.RawMessage(args[1]), nil
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("read args from stdin: %w", err)
	}
	return json.RawMessage(b), nil
}

func (f *enqueueFlags) insertOpts() (*hopper.InsertOpts, error) {
	opts := &hopper.InsertOpts{
		Queue: f.queue, Priority: f.priority, Delay: f.delay, MaxAttempts: f.maxAttempts, MaxRescues: f.maxRescues,
		Timeout: f.timeout, IdempotencyKey: f.idempotencyKey, GroupKey: f.groupKey, MergeKey: f.mergeKey, Merge: hopper.MergePolicy(f.merge),
		FairnessKey: f.fairnessKey, After: f.after, OnParentFailure: hopper.ParentPolicy(f.onParentFail),
	}
	if f.retryBusiness {
		opts.RetryPolicy = &hopper.RetryPolicy{RetryBusinessErrors: true}
	}
	if f.runAt != "" {
		t, err := time.Parse(time.RFC3339, f.runAt)
		if err != nil {
			return nil, usageErrorf("invalid run_at: %q is not an RFC 3339 time like 2026-03-01T12:00:00Z", f.runAt)
		}
		opts.RunAt = t
	}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, usageErrorf("invalid headers: %q is not key=value", h)
		}
		if opts.Headers == nil {
			opts.Headers = map[string]string{}
		}
		opts.Headers[k] = v
	}
	return opts, nil
}
