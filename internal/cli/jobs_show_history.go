package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hopperjobs/hopper"
)

// stackLines is how many lines of a panic's stack `jobs show` prints: the panicking frame
// and a few callers (each frame is two lines).
const stackLines = 10

func printAttempts(w io.Writer, attempts []*hopper.AttemptRecord) error {
	fmt.Fprintf(w, "\nAttempts (%d)\n", len(attempts))
	if len(attempts) == 0 {
		_, err := fmt.Fprintln(w, "  none yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tTOKEN\tWORKER\tSTARTED\tDURATION\tOUTCOME\tERROR")
	for _, a := range attempts {
		dur := "-"
		if !a.EndedAt.IsZero() && !a.StartedAt.IsZero() {
			dur = roundDuration(a.EndedAt.Sub(a.StartedAt)).String()
		}
		outcome := string(a.Outcome)
		if a.ErrorCode != "" {
			outcome += " (business error)"
		}
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, a.Token, a.WorkerID,
			showTime(a.StartedAt, detailTime), dur, outcome, firstLine(a.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range attempts {
		if a.Outcome == hopper.OutcomePanic && a.Stack != "" {
			fmt.Fprintf(w, "\n  attempt %d, %s\n", a.Attempt, a.Error)
			for _, line := range panicFrames(a.Stack, stackLines) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	return nil
}

func printHistory(w io.Writer, events []*hopper.Event) error {
	fmt.Fprintf(w, "\nHistory (%d)\n", len(events))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tTRANSITION\tACTOR\tREASON")
	for _, e := range events {
		from := string(e.From)
		if from == "" {
			from = "new"
		}
		fmt.Fprintf(tw, "  %s\t%s → %s\t%s\t%s\n", showTime(e.At, detailTime), from, e.To, e.Actor, firstLine(e.Reason))
	}
	return tw.Flush()
}

// panicFrames returns up to n lines of a goroutine stack starting at the frame that
// panicked: the frames above it (debug.Stack, the recover, runtime.panic) are Hopper's, not
// the user's.
func panicFrames(stack string, n int) []string {
	lines := strings.Split(strings.TrimSpace(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+2 < len(lines) {
			lines = lines[i+2:] // skip "panic(…)" and its file line
			break
		}
	}
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	for i, l := range lines {
		lines[i] = strings.Replace(l, "\t", "  ", 1) // file lines are indented with a tab
	}
	return lines
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
