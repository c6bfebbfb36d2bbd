package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

type jobsRetryFlags struct {
	retries     int
	args, runAt string
	reason      string
	again       bool
}

func newJobsRetryCmd() *cobra.Command {
	var f jobsRetryFlags
	cmd := &cobra.Command{
		Use:   "retry ID [--retries N] [--args JSON] [--run-at TIME] [--reason TEXT] [--again]",
		Short: "Retry a failed job in place: the same job, with more attempts",
		Long: `Resolve a failed job (an incident) in place: the same job, with its id, idempotency key,
group and history, goes back to its queue with --retries more attempts (default 1), with
--args instead of its args if given (checked as enqueue checks them; "-" reads them from
stdin), at --run-at if given. The job's history records the retry as done by an operator,
with --reason, and the dead-letter audit log (hopper dlq replays) records it with who did it.

Only a failed job is retried (exit 4 otherwise). A dead letter that was replayed is not
retried unless --again: it would run twice (exit 4, naming the replay). To run the work as a
new job instead, use 'hopper dlq replay'; docs/dead-letters.md says when to use which.`,
		Example: `  hopper jobs retry 01a2… --reason "card replaced"
  hopper jobs retry 01a2… --retries 3 --args '{"to":"ops@example.com"}'
  hopper jobs retry 01a2… --run-at 2026-12-01T08:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runJobsRetry(cmd, args[0], &f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.retries, "retries", hopper.DefaultRetryAttempts, "how many more attempts the job gets, 1 to 1000")
	fl.StringVar(&f.args, "args", "", `the job's corrected args (a JSON value; "-" reads stdin); unset keeps its args`)
	fl.StringVar(&f.runAt, "run-at", "", "run the job at this time (RFC 3339) instead of now")
	fl.StringVar(&f.reason, "reason", "retried with the CLI", "recorded in the job's history and the audit log")
	fl.BoolVar(&f.again, "again", false, "retry a dead letter that was replayed before (recorded as forced)")
	addJSONFlag(cmd)
	return cmd
}

func (f *jobsRetryFlags) opts(stdin io.Reader) (hopper.RetryOpts, error) {
	o := hopper.RetryOpts{Retries: f.retries, Reason: f.reason, Again: f.again}
	if f.retries < 1 || f.retries > 1000 {
		return o, usageErrorf("invalid --retries: %d is outside 1–1000", f.retries)
	}
	switch f.args {
	case "":
	case "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return o, fmt.Errorf("read args from stdin: %w", err)
		}
		o.Args = json.RawMessage(b)
	default:
		o.Args = json.RawMessage(f.args)
	}
	if f.runAt != "" {
		t, err := time.Parse(time.RFC3339, f.runAt)
		if err != nil {
			return o, usageErrorf("invalid --run-at: %q is not an RFC 3339 time like 2026-03-01T12:00:00Z", f.runAt)
		}
		o.RunAt = t
	}
	return o, nil
}

func runJobsRetry(cmd *cobra.Command, id string, f *jobsRetryFlags) error {
	opts, err := f.opts(cmd.InOrStdin())
	if err != nil {
		return err
	}
	return withBackend(cmd, true, func(client backend) error {
		job, err := client.RetryJob(cmd.Context(), id, opts)
		if err != nil {
			return incidentRefused(cmd, client, id, "retried in place", err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Job apiJSON `json:"job"`
			}{apiJob(job)})
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "job %s retried in place: %s, attempt %d of %d next\n", id, job.State,
			job.Attempt+1, job.MaxAttempts)
		return err
	})
}

// incidentRefused explains a refused retry or replay of job id (what says which): the state
// it is in, or the replay that dealt with it before; other errors pass through notFound.
func incidentRefused(cmd *cobra.Command, client backend, id, what string, err error) error {
	switch {
	case errors.Is(err, hopper.ErrAlreadyReplayed):
		return &exitError{code: ExitConflict, msg: fmt.Sprintf("job %s cannot be %s: %s (add --again to do it anyway)",
			id, what, alreadyReplayed(err)), err: err}
	case errors.Is(err, hopper.ErrInvalidTransition):
		msg := fmt.Sprintf("job %s cannot be %s: only failed jobs are", id, what)
		if job, gerr := client.Get(cmd.Context(), id); gerr == nil {
			msg = fmt.Sprintf("job %s cannot be %s: it is %s, and only failed jobs are", id, what, job.State)
		}
		return &exitError{code: ExitConflict, msg: msg, err: err}
	}
	return notFound(id, err)
}

// alreadyReplayed is what a refusal for an earlier replay says: the replay it names.
func alreadyReplayed(err error) string {
	if re, ok := errors.AsType[*hopper.ReplayedError](err); ok {
		return fmt.Sprintf("it was already replayed as job %s by %s at %s", re.ReplayJobID, re.ReplayedBy,
			showTime(re.ReplayedAt, detailTime))
	}
	return message(err) // through a server: its message names the replay
}

func newJobsSetRetriesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-retries ID N",
		Short: "Set the attempt budget of a job that has not ended",
		Long: `Set the attempt budget (max attempts, counting those made) of a scheduled, queued, running or
suspended job: more for a job that keeps failing while its cause is being fixed, fewer for one
that should give up sooner. N is at least the attempts made (one more for a job waiting to
run), at most 1000 (exit 2 otherwise). An ended job exits 4: retry a failed one with
'hopper jobs retry'.`,
		Example: `  hopper jobs set-retries 01a2… 10`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var n int
			if _, err := fmt.Sscan(args[1], &n); err != nil || fmt.Sprint(n) != args[1] {
				return usageErrorf("invalid N: %q is not a whole number", args[1])
			}
			return withBackend(cmd, true, func(client backend) error {
				job, err := client.UpdateRetries(cmd.Context(), args[0], n)
				if errors.Is(err, hopper.ErrInvalidTransition) {
					return &exitError{code: ExitConflict, msg: fmt.Sprintf("job %s has ended: only a job that has not ended gets a new budget (retry a failed one with hopper jobs retry)", args[0]), err: err}
				}
				if err != nil {
					return notFound(args[0], err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), &struct {
						Job apiJSON `json:"job"`
					}{apiJob(job)})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "job %s: at most %d attempts (%d made)\n", job.ID, job.MaxAttempts, job.Attempt)
				return err
			})
		},
	}
	addJSONFlag(cmd)
	return cmd
}
