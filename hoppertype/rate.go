package hoppertype

import (
	"fmt"
	"strings"
	"time"
)

// Rate is a rate limit: at most Limit job starts per Period, for a queue or a kind, across
// every process and remote worker. The zero Rate is no limit. It is enforced as a token bucket
// of Limit starts refilled at Limit per Period: after a quiet spell Limit jobs may start at
// once, then starts follow the rate, so over any stretch of time T at most
// Limit + Limit·T/Period jobs start, and over a long run Limit per Period.
type Rate struct {
	Limit  int
	Period time.Duration
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r.Limit == 0 && r.Period == 0 }

// String formats r as ParseRate reads it: "100/1s", "5000/1h", "0" for no limit.
func (r Rate) String() string {
	if r.IsZero() {
		return "0"
	}
	return fmt.Sprintf("%d/%s", r.Limit, shortDuration(r.Period))
}

// shortDuration is d without the zero units time.Duration.String writes: 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
