package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hopperjobs/hopper/internal/apispec"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/schedule"
	"github.com/spf13/cobra"
)

// maxPreview bounds `schedules preview -n`.
const maxPreview = 1000

func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List, show, add, remove, pause, resume and run recurring schedules; preview a spec's fire times",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	cmd.AddCommand(newSchedulesLsCmd(), newSchedulesShowCmd(), newSchedulesAddCmd(), newSchedulesRmCmd(),
		scheduleToggle("pause", "Stop schedule NAME from firing until it is resumed", true),
		scheduleToggle("resume", "Let paused schedule NAME fire again", false),
		newSchedulesRunCmd(), newSchedulesPreviewCmd())
	return cmd
}

func newSchedulesPreviewCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preview --cron SPEC [--tz ZONE] [--from TIME] [-n N]",
		Short: "Print the next fire times of a schedule spec, without touching any database",
		Long: `preview prints the next N fire times of SPEC after --from, one per line in RFC 3339
with the offset of the schedule's time zone, or as a JSON array of strings with --json. It
reads no database, so a spec can be checked before it is saved.

SPEC is a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (a
leading seconds field), a descriptor (@yearly, @monthly, @weekly, @daily, @hourly) or
"@every DURATION". Wall-clock times skipped by a DST change fire at the first instant after
the jump; times repeated by one fire once, on their first occurrence (docs/schedules.md).`,
		Example: `  hopper schedules preview --cron '30 2 * * *' --tz America/New_York --from 2026-03-07T00:00:00Z -n 3`,
		Args:    cobra.NoArgs,
		RunE:    runSchedulesPreview,
	}
	cmd.Flags().String("cron", "", "the schedule spec (required)")
	cmd.Flags().String("tz", "UTC", "IANA time zone the spec is evaluated in")
	cmd.Flags().String("from", "", "list fire times after this RFC 3339 time (default now)")
	cmd.Flags().IntP("count", "n", 10, fmt.Sprintf("how many fire times to print (at most %d)", maxPreview))
	_ = cmd.MarkFlagRequired("cron")
	addJSONFlag(cmd)
	return cmd
}

func runSchedulesPreview(cmd *cobra.Command, _ []string) error {
	flags := cmd.Flags()
	spec, _ := flags.GetString("cron")
	tz, _ := flags.GetString("tz")
	fromText, _ := flags.GetString("from")
	n, _ := flags.GetInt("count")
	if _, err := schedule.LoadZone(tz); err != nil {
		return usageErrorf("--tz: %v", err)
	}
	s, err := schedule.Parse(spec, tz)
	if err != nil {
		return usageErrorf("--cron: %v", err)
	}
	if n < 1 || n > maxPreview {
		return usageErrorf("--count (-n) must be between 1 and %d, not %d", maxPreview, n)
	}
	from := time.Now()
	if fromText != "" {
		if from, err = time.Parse(time.RFC3339, fromText); err != nil {
			return usageErrorf("--from %q is not an RFC 3339 time such as 2026-03-07T12:00:00Z", fromText)
		}
	}
	out := make([]string, 0, n)
	for t := s.Next(from); !t.IsZero() && len(out) < n; t = s.Next(t) {
		out = append(out, t.Format(time.RFC3339Nano))
	}
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), out)
	}
	for _, line := range out {
		if _, err := fmt.Fprintln(cmd.OutOrStdout(), line); err != nil {
			return err
		}
	}
	return nil
}

func newSchedulesLsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List schedules with their last and next fire times",
		Long: `ls lists every schedule by name. Fire times are shown in each schedule's time zone; a
paused schedule's next fire shows "paused", and a schedule that has never enqueued a job shows
"never" as its last fire (null in JSON). SOURCE is "code" for schedules a program declares
(Config.Schedules; change them there) and "api" for those added with 'schedules add' or the API.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withBackend(cmd, true, func(client backend) error {
				list, err := client.Schedules(cmd.Context())
				if err != nil {
					return fmt.Errorf("list schedules: %w", err)
				}
				if wantJSON(cmd) {
					out := make([]*scheduleJSON, len(list))
					for i, s := range list {
						out[i] = newScheduleJSON(s)
					}
					return printJSON(cmd.OutOrStdout(), struct {
						Schedules []*scheduleJSON `json:"schedules"`
					}{out})
				}
				return printSchedules(cmd.OutOrStdout(), list)
			})
		},
	}
	addJSONFlag(cmd)
	return cmd
}

func printSchedules(w io.Writer, list []*hopper.ScheduleInfo) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no schedules")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPEC\tTZ\tKIND\tQUEUE\tSOURCE\tPAUSED\tLAST_FIRE\tNEXT_FIRE")
	for _, s := range list {
		paused, last, next := "no", lastFire(s.LastFireAt, s.TZ), zoned(s.NextFireAt, s.TZ)
		if s.Paused {
			paused, next = "yes", "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, specText(&s.Schedule), s.TZ, targetText(s),
			s.Queue, s.Source, paused, last, next)
	}
	return tw.Flush()
}

// targetText is what a schedule enqueues: its kind, or "workflow NAME (N steps)".
func targetText(s *hopper.ScheduleInfo) string {
	if s.Workflow != nil {
		return fmt.Sprintf("workflow %s (%d steps)", s.Workflow.Name, len(s.Workflow.Steps))
	}
	return s.Kind
}

// specText is a schedule's timing as a user would write it.
func specText(s *hopper.Schedule) string {
	switch {
	case s.FixedDelay != 0:
		return "fixed-delay " + s.FixedDelay.String()
	case s.Every != 0:
		return "@every " + s.Every.String()
	}
	return s.Cron
}

// lastFire shows a schedule's last fire (or last manual run) in its zone: "never" when there
// was none.
func lastFire(t time.Time, tz string) string {
	if t.IsZero() {
		return "never"
	}
	return zoned(t, tz)
}

// zoned shows t in RFC 3339 in the IANA zone tz (UTC when the zone is unknown here); "-" for
// a zero time.
func zoned(t time.Time, tz string) string {
	if t.IsZero() {
		return "-"
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	}
	return t.Format(time.RFC3339)
}

type scheduleJSON struct {
	Name        string            `json:"name"`
	Cron        string            `json:"cron,omitempty"`
	Every       string            `json:"every,omitempty"`
	FixedDelay  string            `json:"fixed_delay,omitempty"`
	TZ          string            `json:"tz"`
	Kind        string            `json:"kind"`
	Queue       string            `json:"queue"`
	Args        json.RawMessage   `json:"args"`
	Headers     map[string]string `json:"headers,omitempty"`
	Priority    int               `json:"priority"`
	MaxAttempts int               `json:"max_attempts"`
	Timeout     string            `json:"timeout,omitempty"`
	CatchUp     string            `json:"catch_up"`
	Overlap     string            `json:"overlap"`
	Jitter      string            `json:"jitter,omitempty"`
	Paused      bool              `json:"paused"`
	Source      string            `json:"source"`
	// LastFireAt and LastManualFireAt are null when there was none.
	LastFireAt       *string `json:"last_fire_at"`
	NextFireAt       string  `json:"next_fire_at,omitempty"`
	LastJobID        string  `json:"last_job_id,omitempty"`
	LastManualFireAt *string `json:"last_manual_fire_at"`
	LastManualJobID  string  `json:"last_manual_job_id,omitempty"`
	// Workflow is a workflow schedule's workflow as the API carries it (name, steps);
	// LastWorkflowID the newest workflow a fire enqueued.
	Workflow       *apiJSON `json:"workflow,omitempty"`
	LastWorkflowID string   `json:"last_workflow_id,omitempty"`
}

// nullTime is t as JSON: null for the zero time.
func nullTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := jsonTime(t)
	return &s
}

func newScheduleJSON(s *hopper.ScheduleInfo) *scheduleJSON {
	return &scheduleJSON{
		Name: s.Name, Cron: s.Cron, Every: durText(s.Every), FixedDelay: durText(s.FixedDelay), TZ: s.TZ,
		Kind: s.Kind, Queue: s.Queue, Args: argsOf(s), Headers: s.Headers, Priority: s.Priority,
		MaxAttempts: s.MaxAttempts, Timeout: durText(s.Timeout), CatchUp: string(s.CatchUp),
		Overlap: string(s.Overlap), Jitter: durText(s.Jitter), Paused: s.Paused, Source: s.Source,
		LastFireAt: nullTime(s.LastFireAt), NextFireAt: jsonTime(s.NextFireAt), LastJobID: s.LastJobID,
		LastManualFireAt: nullTime(s.LastManualFireAt), LastManualJobID: s.LastManualJobID,
		Workflow: scheduleWorkflowJSON(s), LastWorkflowID: s.LastWorkflowID,
	}
}

// scheduleWorkflowJSON is a workflow schedule's workflow as the API shows it; nil for a job schedule.
func scheduleWorkflowJSON(s *hopper.ScheduleInfo) *apiJSON {
	if s.Workflow == nil {
		return nil
	}
	return &apiJSON{apispec.Schedule(s).GetWorkflow()}
}

func durText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

type scheduleFlags struct {
	cron, tz, kind, args, queue, catchUp, overlap string
	workflow                                      string
	every, fixedDelay, timeout, jitter            time.Duration
	priority, maxAttempts                         int
	paused                                        bool
}

func newSchedulesAddCmd() *cobra.Command {
	var f scheduleFlags
	cmd := &cobra.Command{
		Use:   "add NAME (--cron SPEC | --every D | --fixed-delay D) (--kind KIND | --workflow FILE) [flags]",
		Short: "Add a schedule, or replace the one named NAME",
		Long: `add saves a schedule that enqueues a job of KIND on a cron spec (evaluated in --tz), at a
fixed rate (--every) or a fixed delay after the previous run ended (--fixed-delay). Replacing
a schedule keeps its fire times unless its timing changed, and never resumes a paused one.
A schedule a program declares in code cannot be replaced here (exit code 4).

With --workflow FILE (- for stdin) each fire enqueues a workflow instead of a job: the file is
what "hopper workflows enqueue" reads ({"name": …, "steps": [{"name": …, "kind": …}, …]}), each
step's job with its own options (a "delay" after the fire time, not a "run_at"); --kind, --args,
--queue, --priority, --max-attempts and --timeout are then not for it, nor --fixed-delay.`,
		Example: `  hopper schedules add nightly-report --cron '30 2 * * *' --tz America/New_York --kind build-report
  hopper schedules add sync --every 5m --kind sync-crm --args '{"full":false}' --catch-up last
  hopper schedules add cleanup --fixed-delay 10m --kind cleanup --queue maintenance
  hopper schedules add nightly-album --cron '0 3 * * *' --tz Europe/Paris --workflow publish-album.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSchedulesAdd(cmd, args[0], &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cron, "cron", "", "cron spec (5 or 6 fields), descriptor (@daily) or \"@every D\"")
	fl.DurationVar(&f.every, "every", 0, "fire at a fixed rate (e.g. 5m), at multiples of it since the Unix epoch")
	fl.DurationVar(&f.fixedDelay, "fixed-delay", 0, "fire this long after the previous run ended")
	fl.StringVar(&f.tz, "tz", "UTC", "IANA time zone the cron spec is evaluated in")
	fl.StringVar(&f.kind, "kind", "", "kind of the job to enqueue (required without --workflow)")
	fl.StringVar(&f.workflow, "workflow", "", "enqueue the workflow this JSON file describes (- for stdin) instead of a job")
	fl.StringVar(&f.args, "args", "{}", "JSON args of the job")
	fl.StringVar(&f.queue, "queue", "", "queue (default \"default\")")
	fl.IntVar(&f.priority, "priority", 0, "priority, -1000 to 1000")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts per job, 1 to 1000 (default 25)")
	fl.DurationVar(&f.timeout, "timeout", 0, "time limit of each attempt")
	fl.StringVar(&f.catchUp, "catch-up", "skip", "missed fire times: skip, last or all")
	fl.StringVar(&f.overlap, "overlap", "skip", "while a previous job has not ended: skip or allow")
	fl.DurationVar(&f.jitter, "jitter", 0, "delay each run by up to this much")
	fl.BoolVar(&f.paused, "paused", false, "save the schedule paused")
	addJSONFlag(cmd)
	return cmd
}

func runSchedulesAdd(cmd *cobra.Command, name string, f *scheduleFlags) error {
	if !json.Valid([]byte(f.args)) {
		return usageErrorf("--args is not valid JSON: %s", f.args)
	}
	s := hopper.Schedule{Name: name, Cron: f.cron, Every: f.every, FixedDelay: f.fixedDelay, TZ: f.tz,
		Kind: f.kind, Args: json.RawMessage(f.args), Queue: f.queue, Priority: f.priority,
		MaxAttempts: f.maxAttempts, Timeout: f.timeout, CatchUp: hopper.CatchUp(f.catchUp),
		Overlap: hopper.Overlap(f.overlap), Jitter: f.jitter, Paused: f.paused}
	switch {
	case f.workflow != "" && (f.kind != "" || cmd.Flags().Changed("args")):
		return usageErrorf("--workflow enqueues a workflow: not with --kind or --args")
	case f.workflow != "":
		wf, err := readWorkflowFile(cmd.InOrStdin(), f.workflow)
		if err != nil {
			return err
		}
		s.Workflow, s.Args = &wf, nil
	case f.kind == "":
		return usageErrorf("set --kind (the job to enqueue) or --workflow FILE")
	}
	return withBackend(cmd, false, func(client backend) error {
		info, err := client.AddSchedule(cmd.Context(), s)
		if err != nil {
			return err
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), newScheduleJSON(info))
		}
		next := "next fire " + zoned(info.NextFireAt, info.TZ)
		if info.Paused {
			next = "paused"
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "schedule %s saved (%s)\n", info.Name, next)
		return err
	})
}

func newSchedulesRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove schedule NAME; the jobs it enqueued stay",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBackend(cmd, true, func(client backend) error {
				if err := client.RemoveSchedule(cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "schedule %s removed\n", args[0])
				return err
			})
		},
	}
}

func scheduleToggle(name, short string, pause bool) *cobra.Command {
	return &cobra.Command{
		Use:   name + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBackend(cmd, true, func(client backend) error {
				op, done := client.ResumeSchedule, "resumed"
				if pause {
					op, done = client.PauseSchedule, "paused"
				}
				if err := op(cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "schedule %s %s\n", args[0], done)
				return err
			})
		},
	}
}

// defaultShowFires is how many next fire times `schedules show` prints.
const defaultShowFires = 5

func newSchedulesShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show NAME [-n N]",
		Short: "Show schedule NAME with its next fire times",
		Long: `show prints a schedule's definition and state (last fire and its job, last manual run
and its job, "never" when there was none) and its next N fire times in its time zone,
computed from its spec as the leader computes them. A fixed-delay schedule has one: its
later fires depend on when each run ends. A paused schedule fires none of them until it is
resumed (then its catch-up policy decides about those that passed). --json prints the
schedule as 'ls --json' does, with "next_fires", an array of RFC 3339 times.`,
		Example: `  hopper schedules show nightly-report -n 3`,
		Args:    cobra.ExactArgs(1),
		RunE:    runSchedulesShow,
	}
	cmd.Flags().IntP("count", "n", defaultShowFires, fmt.Sprintf("how many next fire times to print (at most %d)", maxPreview))
	addJSONFlag(cmd)
	return cmd
}

func runSchedulesShow(cmd *cobra.Command, args []string) error {
	n, _ := cmd.Flags().GetInt("count")
	if n < 1 || n > maxPreview {
		return usageErrorf("--count (-n) must be between 1 and %d, not %d", maxPreview, n)
	}
	return withBackend(cmd, true, func(client backend) error {
		s, err := client.GetSchedule(cmd.Context(), args[0])
		if err != nil {
			return scheduleNotFound(args[0], err)
		}
		fires := s.NextFireTimes(n)
		if wantJSON(cmd) {
			next := make([]string, len(fires))
			for i, t := range fires {
				next[i] = t.Format(time.RFC3339Nano)
			}
			return printJSON(cmd.OutOrStdout(), &struct {
				*scheduleJSON
				NextFires []string `json:"next_fires"`
			}{newScheduleJSON(s), next})
		}
		return printSchedule(cmd.OutOrStdout(), s, fires)
	})
}

// printSchedule prints one schedule and its next fire times.
func printSchedule(w io.Writer, s *hopper.ScheduleInfo, fires []time.Time) error {
	fmt.Fprintf(w, "Schedule %s\n\n", s.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("timing", specText(&s.Schedule))
	row("time zone", s.TZ)
	if s.Workflow != nil {
		row("workflow", targetText(s))
		for _, st := range s.Workflow.Steps {
			step := st.Name + ": " + st.Args.Kind()
			if len(st.After) > 0 {
				step += " after " + strings.Join(st.After, ", ")
			}
			row("  step", step)
		}
		last := s.LastWorkflowID
		if last == "" {
			last = "none"
		}
		row("last workflow", last)
	} else {
		row("kind", s.Kind)
		row("queue", s.Queue)
		row("args", string(argsOf(s)))
	}
	if len(s.Headers) > 0 {
		row("headers", formatHeaders(s.Headers))
	}
	row("priority", fmt.Sprint(s.Priority))
	row("max attempts", fmt.Sprint(s.MaxAttempts))
	if s.Timeout != 0 {
		row("timeout", s.Timeout.String())
	}
	row("catch-up", string(s.CatchUp))
	row("overlap", string(s.Overlap))
	if s.Jitter != 0 {
		row("jitter", s.Jitter.String())
	}
	row("source", s.Source)
	row("paused", map[bool]string{true: "yes", false: "no"}[s.Paused])
	row("last fire", withJob(lastFire(s.LastFireAt, s.TZ), s.LastJobID))
	row("last manual run", withJob(lastFire(s.LastManualFireAt, s.TZ), s.LastManualJobID))
	row("created", zoned(s.CreatedAt, s.TZ))
	row("updated", zoned(s.UpdatedAt, s.TZ))
	if err := tw.Flush(); err != nil {
		return err
	}
	head := "\nNext fire times"
	switch {
	case len(fires) == 0:
		head += ": none"
	case s.Paused:
		head += " (paused: it fires none of them until it is resumed)"
	case s.FixedDelay != 0:
		head += " (fixed delay: the earliest; the next ones depend on when each run ends)"
	}
	fmt.Fprintln(w, head)
	for _, t := range fires {
		fmt.Fprintf(w, "  %s\n", t.Format(time.RFC3339))
	}
	return nil
}

func withJob(when, job string) string {
	if job == "" {
		return when
	}
	return when + " (job " + job + ")"
}

// argsOf is a schedule's job args as JSON ({} when none).
func argsOf(s *hopper.ScheduleInfo) json.RawMessage {
	if args, _ := s.Args.(json.RawMessage); len(args) > 0 {
		return args
	}
	return json.RawMessage("{}")
}

// scheduleNotFound says which schedule a command could not find (exit code 3).
func scheduleNotFound(name string, err error) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &exitError{code: ExitNotFound, msg: fmt.Sprintf("schedule %s not found", name), err: err}
	}
	return err
}

func newSchedulesRunCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Enqueue schedule NAME's job now, without changing its next fire times",
		Long: `run enqueues the job schedule NAME would enqueue (kind, args, queue, headers), queued at
once, with the header hopper-manual-fire: true. The schedule records it as its last manual
run; its next fire times, last fire and last job are left as they were, and a paused schedule
runs too. Each run enqueues a job. The job's history says it was run by an operator (through
a server: by the key's name). --json prints the job.`,
		Example: `  hopper schedules run nightly-report`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBackend(cmd, true, func(client backend) error {
				job, err := client.RunSchedule(cmd.Context(), args[0])
				if err != nil {
					return scheduleNotFound(args[0], err)
				}
				if wantJSON(cmd) {
					return printJSON(cmd.OutOrStdout(), &struct {
						Job apiJSON `json:"job"`
					}{apiJob(job)})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "schedule %s run: job %s %s\n", args[0], job.ID, job.State)
				return err
			})
		},
	}
	addJSONFlag(cmd)
	return cmd
}
