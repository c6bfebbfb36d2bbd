package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/spf13/cobra"
)

func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, count, replay and retry dead letters (failed jobs)",
		Long: `A dead letter is a job that failed for good: it ran out of attempts or its handler said
not to retry. Dead letters are kept for the dead-letter retention (7 days by default).
Replaying one enqueues a new job with the same work; the dead letter stays as it was.
Retrying one resolves it in place: the same job goes back to work with more attempts. Both
are recorded in an audit log (hopper dlq replays). A dead letter is replayed once: a second
replay, or a retry of a replayed one, needs --again.`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(newDLQLsCmd(), newDLQStatsCmd(), newDLQReplayCmd(), newDLQRetryCmd(), newDLQReplaysCmd())
	return cmd
}

type dlqFilterFlags struct {
	queues, kinds []string
	since, until  string
}

func (f *dlqFilterFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.queues, "queue", nil, "only dead letters of these queues")
	fl.StringSliceVar(&f.kinds, "kind", nil, "only dead letters of these kinds")
	fl.StringVar(&f.since, "since", "", "only jobs that failed at or after this time (RFC 3339, or a duration ago like 1h)")
	fl.StringVar(&f.until, "until", "", "only jobs that failed before this time (RFC 3339, or a duration ago)")
}

func (f *dlqFilterFlags) filter(now time.Time) (hopper.DeadLetterFilter, error) {
	out := hopper.DeadLetterFilter{Queues: f.queues, Kinds: f.kinds}
	var err error
	if f.since != "" {
		if out.Since, err = parseSince("since", f.since, now); err != nil {
			return out, err
		}
	}
	if f.until != "" {
		if out.Until, err = parseSince("until", f.until, now); err != nil {
			return out, err
		}
	}
	return out, nil
}

type dlqLsFlags struct {
	dlqFilterFlags
	limit           int
	cursor          string
	includeReplayed bool
	errorCodes      []string
}

func newDLQLsCmd() *cobra.Command {
	var f dlqLsFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List dead letters, newest first",
		Long: `List the dead letters, newest first: those never replayed, which 'hopper dlq stats' counts.
A replayed dead letter has been dealt with and is left out; --include-replayed lists it too,
marked in the REPLAYED column (how often it was replayed) and, with --json, in "replays".`,
		Example: `  hopper dlq ls --queue billing --since 24h
  hopper dlq ls --kind send-invoice --limit 10 --json
  hopper dlq ls --include-replayed
  hopper dlq ls --error-code card_declined,out_of_stock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDLQLs(cmd, &f) },
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&f.includeReplayed, "include-replayed", false, "list the dead letters that were replayed too, marked")
	cmd.Flags().StringSliceVar(&f.errorCodes, "error-code", nil, "only dead letters that failed with these business error codes")
	cmd.Flags().IntVar(&f.limit, "limit", 50, "page size, 1 to 10000")
	cmd.Flags().StringVar(&f.cursor, "cursor", "", "continue from a previous page's next cursor")
	addJSONFlag(cmd)
	return cmd
}

func runDLQLs(cmd *cobra.Command, f *dlqLsFlags) error {
	if f.limit < 1 || f.limit > 10000 {
		return usageErrorf("invalid --limit: %d is outside 1–10000", f.limit)
	}
	filter, err := f.filter(time.Now())
	if err != nil {
		return err
	}
	return withBackend(cmd, true, func(client backend) error {
		res, err := client.DeadLetters(cmd.Context(), &hopper.DeadLetterParams{DeadLetterFilter: filter,
			IncludeReplayed: f.includeReplayed, ErrorCodes: f.errorCodes, Cursor: f.cursor, Limit: f.limit})
		if err != nil {
			return fmt.Errorf("list dead letters: %w", err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), newDeadLettersPage(res))
		}
		return printDeadLetters(cmd.OutOrStdout(), res, f.includeReplayed)
	})
}

// deadLettersPage is a page of dead letters: DeadLetterService.List's answer.
type deadLettersPage struct {
	Jobs       []apiJSON          `json:"jobs"`
	Replays    map[string]apiJSON `json:"replays"`
	NextCursor string             `json:"nextCursor"`
}

func newDeadLettersPage(res *hopper.DeadLetterPage) deadLettersPage {
	out := deadLettersPage{Jobs: apiJobs(res.Jobs()), Replays: map[string]apiJSON{}, NextCursor: res.NextCursor}
	for id, r := range apispec.DeadLetterReplays(res.DeadLetters) {
		out.Replays[id] = apiJSON{r}
	}
	return out
}

func printDeadLetters(w io.Writer, res *hopper.DeadLetterPage, includeReplayed bool) error {
	if len(res.DeadLetters) == 0 {
		msg := "no dead letters"
		if !includeReplayed {
			msg += " (never replayed; --include-replayed lists the replayed ones too)"
		}
		_, err := fmt.Fprintln(w, msg)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tQUEUE\tATTEMPT\tFAILED\tREPLAY\tREPLAYED\tLAST_ERROR")
	for _, d := range res.DeadLetters {
		replayed := "-"
		if d.Replays > 0 {
			replayed = fmt.Sprint(d.Replays)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Kind, d.Queue, attemptCount(d.Attempt, d.MaxAttempts),
			showTime(d.FinishedAt, tableTime), d.ReplayCount, replayed, oneLine(d.LastError, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.NextCursor != "" {
		_, err := fmt.Fprintf(w, "\nmore dead letters: --cursor %s\n", res.NextCursor)
		return err
	}
	return nil
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func newDLQStatsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count the dead letters and show how long the oldest has waited",
		Long: `Count the dead letters that 'hopper dlq ls' lists (those never replayed) and show when the
oldest of them failed; count the replayed ones apart (those 'hopper dlq ls --include-replayed'
lists in addition).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withBackend(cmd, true, func(client backend) error {
				st, err := client.DeadLetterStats(cmd.Context())
				if err != nil {
					return fmt.Errorf("dead-letter stats: %w", err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), newDLQStatsJSON(st, time.Now()))
				}
				return printDLQStats(cmd.OutOrStdout(), st, time.Now())
			})
		},
	}
	addJSONFlag(cmd)
	return cmd
}

type dlqStatsJSON struct {
	Count             int64   `json:"count"`
	OldestFailedAt    string  `json:"oldest_failed_at,omitempty"`
	OldestAgeSeconds  float64 `json:"oldest_age_seconds,omitempty"`
	OldestAgeReadable string  `json:"oldest_age,omitempty"`
	Replayed          int64   `json:"replayed"`
}

func newDLQStatsJSON(st *hopper.DeadLetterStats, now time.Time) dlqStatsJSON {
	out := dlqStatsJSON{Count: st.Count, OldestFailedAt: jsonTime(st.Oldest), Replayed: st.Replayed}
	if age := st.OldestAge(now); age > 0 {
		out.OldestAgeSeconds, out.OldestAgeReadable = age.Seconds(), roundDuration(age).String()
	}
	return out
}

func printDLQStats(w io.Writer, st *hopper.DeadLetterStats, now time.Time) error {
	if st.Count == 0 {
		fmt.Fprintln(w, "no dead letters")
	} else {
		fmt.Fprintf(w, "dead letters: %d\noldest:       %s (%s)\n", st.Count, showTime(st.Oldest, detailTime), relative(st.Oldest, now))
	}
	var err error
	if st.Replayed > 0 {
		_, err = fmt.Fprintf(w, "replayed:     %d (dealt with: dlq ls --include-replayed lists them)\n", st.Replayed)
	}
	return err
}

type dlqReplayFlags struct {
	dlqFilterFlags
	all, yes, again bool
	limit           int
	reason          string
}

func newDLQReplayCmd() *cobra.Command {
	var f dlqReplayFlags
	cmd := &cobra.Command{
		Use:   "replay [ID]",
		Short: "Replay one dead letter, or with --all those matching filters",
		Long: `Replay enqueues a new job that does a dead letter's work again (same kind, queue, args,
headers, priority, attempts, timeout, retry policy and group), with its lineage: original_id,
replay_count and replayed_by. The dead letter itself stays failed. A dead letter that was
replayed before is not replayed again (exit 4, naming the earlier replay) unless --again,
which the audit log records as forced.

With --all it replays, oldest first, up to --limit dead letters matching the filters that were
never replayed before, in one transaction: running it again continues where it stopped, and it
says how many replayed ones it skipped. It asks for confirmation unless --yes is given.`,
		Example: `  hopper dlq replay 0190f1c2-7d3e-7c1a-9a51-3f0c2a1b4d5e
  hopper dlq replay 0190f1c2-7d3e-7c1a-9a51-3f0c2a1b4d5e --again --reason "second charge agreed"
  hopper dlq replay --all --queue billing --since 1h --limit 500 --yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runDLQReplay(cmd, args, &f) },
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&f.all, "all", false, "replay every dead letter matching the filters (bounded by --limit)")
	cmd.Flags().IntVar(&f.limit, "limit", hopper.DefaultReplayLimit, fmt.Sprintf("with --all: the most jobs to replay, 1 to %d", hopper.MaxReplayLimit))
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "with --all: do not ask for confirmation")
	cmd.Flags().BoolVar(&f.again, "again", false, "with an ID: replay a dead letter that was replayed before (recorded as forced)")
	cmd.Flags().StringVar(&f.reason, "reason", "", `with an ID: recorded in the audit log (default "replay")`)
	addJSONFlag(cmd)
	return cmd
}

func runDLQReplay(cmd *cobra.Command, args []string, f *dlqReplayFlags) error {
	switch {
	case f.all && len(args) > 0:
		return usageErrorf("give a job ID or --all, not both")
	case !f.all && len(args) == 0:
		return usageErrorf("give the ID of the dead letter to replay, or --all")
	case !f.all && (len(f.queues) > 0 || len(f.kinds) > 0 || f.since != "" || f.until != ""):
		return usageErrorf("--queue, --kind, --since and --until go with --all")
	case f.all && (f.again || f.reason != ""):
		return usageErrorf("--again and --reason go with an ID: --all replays only dead letters never replayed")
	case f.all && (f.limit < 1 || f.limit > hopper.MaxReplayLimit):
		return usageErrorf("invalid --limit: %d is outside 1–%d", f.limit, hopper.MaxReplayLimit)
	}
	if !f.all {
		return withBackend(cmd, true, func(client backend) error {
			return replayOne(cmd, client, args[0], hopper.ReplayOpts{Again: f.again, Reason: f.reason})
		})
	}
	filter, err := f.filter(time.Now())
	if err != nil {
		return err
	}
	if !f.yes {
		if err := confirm(cmd, fmt.Sprintf("Replay up to %d dead letters%s that were never replayed? [y/N] ",
			f.limit, describeFilter(filter))); err != nil {
			return err
		}
	}
	return withBackend(cmd, true, func(client backend) error {
		res, err := client.ReplayMany(cmd.Context(), filter, f.limit)
		if err != nil {
			return fmt.Errorf("replay dead letters: %w", err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				Jobs       []apiJSON `json:"jobs"`
				ReplayedBy string    `json:"replayedBy,omitempty"`
				Skipped    int       `json:"skipped"`
			}{apiJobs(res.Jobs), replayedBy(res.Jobs), res.Skipped})
		}
		w := cmd.OutOrStdout()
		for _, j := range res.Jobs {
			fmt.Fprintf(w, "new job %s (replay %d of %s)\n", j.ID, j.ReplayCount, j.OriginalID)
		}
		_, err = fmt.Fprintf(w, "%d dead letters replayed%s\n", len(res.Jobs), skippedNote(res.Skipped))
		return err
	})
}

func replayOne(cmd *cobra.Command, client backend, id string, opts hopper.ReplayOpts) error {
	job, err := client.ReplayWith(cmd.Context(), id, opts)
	if err != nil {
		return incidentRefused(cmd, client, id, "replayed", err)
	}
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), &struct {
			Job        apiJSON `json:"job"`
			ReplayedBy string  `json:"replayedBy"`
		}{apiJob(job), job.ReplayedBy})
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "job %s replayed as %s (replay %d of %s)\n", id, job.ID,
		job.ReplayCount, job.OriginalID)
	return err
}

// skippedNote tells how many dead letters a bulk replay or retry left as replayed before.
func skippedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d skipped: replayed before)", n)
}

// replayedBy is who the replays are recorded as done by (one caller did them all), "" for none.
func replayedBy(jobs []*hopper.JobRow) string {
	if len(jobs) == 0 {
		return ""
	}
	return jobs[0].ReplayedBy
}

// confirm asks question on stderr and reads the answer from stdin; anything but y or yes
// (end of input included) stops the command with a usage error.
func confirm(cmd *cobra.Command, question string) error {
	fmt.Fprint(cmd.ErrOrStderr(), question)
	answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	fmt.Fprintln(cmd.ErrOrStderr())
	return usageErrorf("not confirmed: nothing was done (add --yes to skip the question)")
}

func describeFilter(f hopper.DeadLetterFilter) string {
	var parts []string
	if len(f.Queues) > 0 {
		parts = append(parts, "in queue "+strings.Join(f.Queues, ", "))
	}
	if len(f.Kinds) > 0 {
		parts = append(parts, "of kind "+strings.Join(f.Kinds, ", "))
	}
	if !f.Since.IsZero() {
		parts = append(parts, "failed since "+f.Since.Local().Format(tableTime))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "failed before "+f.Until.Local().Format(tableTime))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, ", ")
}

func newDLQReplaysCmd() *cobra.Command {
	var p hopper.ReplayListParams
	var since string
	cmd := &cobra.Command{
		Use:   "replays",
		Short: "Show the dead-letter audit log (replays and retries in place), newest first",
		Example: `  hopper dlq replays --job 0190f1c2-7d3e-7c1a-9a51-3f0c2a1b4d5e
  hopper dlq replays --by ops-admin --since 24h --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if p.Limit < 1 || p.Limit > 1000 {
				return usageErrorf("invalid --limit: %d is outside 1–1000", p.Limit)
			}
			if since != "" {
				var err error
				if p.Since, err = parseSince("since", since, time.Now()); err != nil {
					return err
				}
			}
			return withBackend(cmd, true, func(client backend) error {
				res, err := client.Replays(cmd.Context(), &p)
				if err != nil {
					return fmt.Errorf("list replays: %w", err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), replaysJSON(res))
				}
				return printReplays(cmd.OutOrStdout(), res)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&p.SourceJobID, "job", "", "only replays of this dead letter")
	fl.StringVar(&p.OriginalID, "original", "", "only replays descending from this job (a whole lineage)")
	fl.StringVar(&p.ReplayedBy, "by", "", "only replays made by this actor (an API key name, cli:<user> or api)")
	fl.StringVar(&since, "since", "", "only replays made at or after this time (RFC 3339, or a duration ago like 1h)")
	fl.IntVar(&p.Limit, "limit", 50, "page size, 1 to 1000")
	fl.StringVar(&p.Cursor, "cursor", "", "continue from a previous page's next cursor")
	addJSONFlag(cmd)
	return cmd
}

type replayJSON struct {
	ID          int64  `json:"id"`
	SourceJobID string `json:"source_job_id"`
	NewJobID    string `json:"new_job_id"`
	OriginalID  string `json:"original_id"`
	ReplayedBy  string `json:"replayed_by"`
	ReplayedAt  string `json:"replayed_at"`
	Reason      string `json:"reason,omitempty"`
	Action      string `json:"action"`
	Forced      bool   `json:"forced"`
}

func replaysJSON(res *hopper.ReplayListResult) any {
	out := struct {
		Replays    []*replayJSON `json:"replays"`
		NextCursor string        `json:"next_cursor"`
	}{Replays: make([]*replayJSON, len(res.Replays)), NextCursor: res.NextCursor}
	for i, r := range res.Replays {
		out.Replays[i] = &replayJSON{ID: r.ID, SourceJobID: r.SourceJobID, NewJobID: r.NewJobID,
			OriginalID: r.OriginalID, ReplayedBy: r.ReplayedBy, ReplayedAt: jsonTime(r.ReplayedAt), Reason: r.Reason,
			Action: r.Action, Forced: r.Forced}
	}
	return out
}

func printReplays(w io.Writer, res *hopper.ReplayListResult) error {
	if len(res.Replays) == 0 {
		_, err := fmt.Fprintln(w, "no replays")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tACTION\tBY\tDEAD_LETTER\tNEW_JOB\tORIGINAL")
	for _, r := range res.Replays {
		action := r.Action
		if r.Forced {
			action += " (forced)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", showTime(r.ReplayedAt, tableTime), action, r.ReplayedBy,
			r.SourceJobID, r.NewJobID, r.OriginalID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.NextCursor != "" {
		_, err := fmt.Fprintf(w, "\nmore replays: --cursor %s\n", res.NextCursor)
		return err
	}
	return nil
}

// cliActor is who a replay made with --database is recorded as done by.
func cliActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}

// The dead-letter calls of a database opened by the CLI.

func (l local) ReplayWith(ctx context.Context, id string, opts hopper.ReplayOpts) (*hopper.JobRow, error) {
	opts.By = cliActor()
	return l.Client.ReplayWith(ctx, id, opts)
}

func (l local) ReplayMany(ctx context.Context, f hopper.DeadLetterFilter, limit int) (*hopper.ReplayManyResult, error) {
	return l.Client.ReplayMany(ctx, f, limit, cliActor())
}

func (l local) RetryJob(ctx context.Context, id string, opts hopper.RetryOpts) (*hopper.JobRow, error) {
	opts.By, opts.Actor = cliActor(), hopper.ActorOperator
	return l.Client.RetryJob(ctx, id, opts)
}

func (l local) RetryMany(ctx context.Context, f hopper.DeadLetterFilter, opts hopper.RetryManyOpts) (*hopper.RetryManyResult, error) {
	opts.By, opts.Actor = cliActor(), hopper.ActorOperator
	return l.Client.RetryMany(ctx, f, opts)
}

// serveFlags name the flag of each hopper.Config field serve sets from one.
var serveFlags = map[string]string{"Config.ResultTTL": "--result-ttl",
	"Config.DeadLetterRetention": "--dead-letter-retention", "Config.DeadLetterWebhook": "--dead-letter-webhook",
	"Config.MaxRescues": "--max-rescues", "Config.MaxCPU": "--max-cpu", "Config.MaxMemory": "--max-memory"}

// serveFlagError turns the client's refusal of a value one of serve's flags set into a usage
// error naming the flag (the client names its Config field, which the user never saw).
func serveFlagError(err error) error {
	var ve *hopper.ValidationError
	if errors.As(err, &ve) {
		if flag, ok := serveFlags[ve.Field]; ok {
			return usageErrorf("%s: %s", flag, ve.Reason)
		}
	}
	return err
}

// addRetentionFlags adds serve's flags for result TTL and dead letters.
func addRetentionFlags(cmd *cobra.Command, o *serveOptions) {
	f := cmd.Flags()
	f.DurationVar(&o.resultTTL, "result-ttl", 24*time.Hour, "keep completed and canceled jobs this long, unless the job says otherwise")
	f.DurationVar(&o.dlqRetention, "dead-letter-retention", 7*24*time.Hour, "keep failed jobs (dead letters) this long")
	f.StringVar(&o.dlqWebhook, "dead-letter-webhook", "", "POST each new dead letter as JSON to this http(s) URL (5 s timeout, 3 tries)")
}
