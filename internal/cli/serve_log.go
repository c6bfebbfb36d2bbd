package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// addLogFlags adds serve's --log-format and --log-level.
func addLogFlags(cmd *cobra.Command, o *serveOptions) {
	o.logFormat, o.logLevel = "text", logLevel(slog.LevelInfo)
	f := cmd.Flags()
	f.Var(&o.logFormat, "log-format", "log lines as text (key=value) or json (one object a line), on standard error")
	f.Var(&o.logLevel, "log-level", "least severe log lines written: debug (a line per job), info, warn or error")
}

// logFormat is --log-format: text or json.
type logFormat string

func (f *logFormat) String() string { return string(*f) }
func (f *logFormat) Type() string   { return "logFormat" }

func (f *logFormat) Set(s string) error {
	switch s {
	case "text", "json":
		*f = logFormat(s)
		return nil
	}
	return fmt.Errorf("%q is not text or json", s)
}

// logLevel is --log-level: debug, info, warn or error.
type logLevel slog.Level

func (l *logLevel) String() string { return strings.ToLower(slog.Level(*l).String()) }
func (l *logLevel) Type() string   { return "logLevel" }

func (l *logLevel) Set(s string) error {
	for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		if strings.EqualFold(s, lv.String()) {
			*l = logLevel(lv)
			return nil
		}
	}
	return fmt.Errorf("%q is not debug, info, warn or error", s)
}

// newLogger is serve's logger on w, in format from level on.
func newLogger(w io.Writer, format logFormat, level logLevel) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.Level(level)}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
