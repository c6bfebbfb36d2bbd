// Package field holds the rules a value from outside is checked against, one place for every
// door (the Go API, the RPC API, the async endpoints, the CLI, the remote worker's own
// configuration): text that is valid UTF-8 without NUL bytes, bounded lengths, names of kinds
// and queues. A bad value is a *hoppertype.ValidationError naming the field. It imports no
// store, so the remote worker checks its configuration by the server's rules without linking
// one.
package field

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Lengths of names, in bytes.
const (
	MaxKindLen  = 255
	MaxQueueLen = 128
	// MaxErrorCodeLen bounds a business error's code (ErrorCode).
	MaxErrorCodeLen = 128
	// MaxFairnessKeyLen bounds a job's fairness key (FairnessKey).
	MaxFairnessKeyLen = 128
	// MaxFilterLen bounds a filter value of a listing (a part of a name), a cursor, a time zone.
	MaxFilterLen = 255
)

// Limits of free text about a job, in bytes (hopper re-exports them): longer text is refused
// with a *ValidationError naming the field; the remote worker clips what it reports to fit.
const (
	MaxReasonBytes          = 4 << 10
	MaxProgressMessageBytes = 4 << 10
	MaxErrorBytes           = 64 << 10
)

// Limits of times (hopper re-exports them): a run-at further in the past is refused as a
// likely bug, one further ahead (or a delay) as good as never.
const (
	MaxRunAtPast   = 24 * time.Hour
	MaxRunAtFuture = 5 * 365 * 24 * time.Hour
)

// Invalid is a *hoppertype.ValidationError of field, its reason formatted.
func Invalid(field, format string, args ...any) error {
	return &hoppertype.ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Text refuses a string that is not valid UTF-8 or holds a NUL byte: PostgreSQL's text
// refuses both, SQLite would keep them, and a job holding them could be neither shown through
// the API (protobuf strings are UTF-8) nor handed to a remote worker.
func Text(field, s string) error {
	if why := TextProblem(s); why != "" {
		return Invalid(field, "%s", why)
	}
	return nil
}

// TextProblem says what makes s unusable as text; "" when nothing does.
func TextProblem(s string) string {
	switch i := BadText(s); {
	case i < 0:
		return ""
	case s[i] == 0:
		return fmt.Sprintf("contains a NUL byte at byte %d", i)
	default:
		return fmt.Sprintf("not valid UTF-8 at byte %d", i)
	}
}

// BadText returns the offset of the first byte that makes s unusable as text, or -1.
func BadText(s string) int {
	for i := 0; i < len(s); {
		if s[i] == 0 {
			return i
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// Limited is Text with a length limit in bytes.
func Limited(field, s string, limit int) error {
	if len(s) > limit {
		return Invalid(field, "is %d bytes, more than %d", len(s), limit)
	}
	return Text(field, s)
}

// Kind checks a job kind's name: text, 1–MaxKindLen bytes, no white space or control
// characters.
func Kind(kind string) error {
	if err := Text("kind", kind); err != nil {
		return err
	}
	switch {
	case kind == "":
		return Invalid("kind", "is empty")
	case len(kind) > MaxKindLen:
		return Invalid("kind", "is %d bytes, more than %d", len(kind), MaxKindLen)
	case strings.IndexFunc(kind, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return Invalid("kind", "%q contains white space or control characters", kind)
	}
	return nil
}

// Queue checks a queue's name given in field: 1–MaxQueueLen characters, letters, digits and
// '_', '-', '.', ':'.
func Queue(field, q string) error { return name(field, q, MaxQueueLen) }

// Name checks a workflow's or a step's name given in field: 1–MaxQueueLen characters,
// letters, digits and '_', '-', '.', ':' (the characters of a queue's name).
func Name(field, s string) error { return name(field, s, MaxQueueLen) }

// ErrorCode checks a business error's code given in field: 1–MaxErrorCodeLen characters,
// letters, digits and '_', '-', '.', ':' (the characters of a queue's name), so that a code
// is a label any metric, URL and shell can carry as it is.
func ErrorCode(field, code string) error { return name(field, code, MaxErrorCodeLen) }

// FairnessKey checks a job's fairness key given in field: "" (no key) or text of 1–
// MaxFairnessKeyLen bytes without control characters. A key names a tenant (a customer id, an
// e-mail address), so any other character is allowed.
func FairnessKey(field, key string) error {
	if err := Limited(field, key, MaxFairnessKeyLen); err != nil {
		return err
	}
	if i := strings.IndexFunc(key, unicode.IsControl); i >= 0 {
		return Invalid(field, "%q contains a control character at byte %d", key, i)
	}
	return nil
}

// MaxKeyWeight bounds a fairness key's weight in a queue.
const MaxKeyWeight = 1000

// KeyWeight checks a fairness key's weight setting: the key (named fairness_key) is not empty
// and FairnessKey accepts it, the weight is 0 to MaxKeyWeight (0 and 1 remove a weight).
func KeyWeight(key string, weight int) error {
	if key == "" {
		return Invalid("fairness_key", "is empty: a weight is for a key")
	}
	if err := FairnessKey("fairness_key", key); err != nil {
		return err
	}
	if weight < 0 || weight > MaxKeyWeight {
		return Invalid("weight", "%d is outside 1–%d (0 or 1 removes it)", weight, MaxKeyWeight)
	}
	return nil
}

// name checks a name given in field: 1–limit ASCII letters, digits, '_', '-', '.', ':'.
func name(field, s string, limit int) error {
	if s == "" || len(s) > limit {
		return Invalid(field, "%q must be 1–%d characters", Clip(s, limit+1), limit)
	}
	for _, r := range s {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.:", r))) {
			return Invalid(field, "%q: only letters, digits, '_', '-', '.' and ':' are allowed", s)
		}
	}
	return nil
}

// QueueNames returns the queues that queue and queues name together: queue, then queues,
// each once; def when both are empty.
func QueueNames(queue string, queues []string, def string) []string {
	if queue == "" && len(queues) == 0 {
		return []string{def}
	}
	names := queues
	if queue != "" {
		names = append([]string{queue}, queues...)
	}
	out := make([]string, 0, len(names))
	for _, q := range names {
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// Queues checks the queues a remote worker asks for: queue (unless empty, when queues are
// named instead) and each of queues, named queues[i], at most most once merged.
func Queues(queue string, queues []string, most int) error {
	if len(queues) > most {
		return Invalid("queues", "%d queues, more than %d", len(queues), most)
	}
	if queue != "" || len(queues) == 0 {
		if err := Queue("queue", queue); err != nil {
			return err
		}
	}
	for i, q := range queues {
		if err := Queue(fmt.Sprintf("queues[%d]", i), q); err != nil {
			return err
		}
	}
	if n := len(QueueNames(queue, queues, "")); n > most {
		return Invalid("queues", "%d queues with queue, more than %d", n, most)
	}
	return nil
}

// Clean makes free text (errors, stacks, reasons, progress messages) storable in any
// store: valid UTF-8 without NUL bytes, which PostgreSQL's text type refuses.
func Clean(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// ClipText is Clean(s) cut to at most limit bytes, at a rune boundary, ending with "…"
// when it was cut: free text a program writes from what it cannot refuse (a handler's error,
// a release reason), made to fit a field's limit, so a report is never refused for its length.
// A limit under 4 bytes cuts without the mark.
func Clip(s string, limit int) string {
	s = Clean(s)
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	if limit < len(mark)+1 {
		return cutRunes(s, max(limit, 0))
	}
	return cutRunes(s, limit-len(mark)) + mark
}

// cutRunes returns the longest prefix of valid UTF-8 s that holds whole runes in at most n bytes.
func cutRunes(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
