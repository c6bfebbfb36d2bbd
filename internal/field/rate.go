package field

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hopperjobs/hopper/hoppertype"
)

// The bounds of a rate limit.
const (
	MinRatePeriod = time.Millisecond
	MaxRatePeriod = 30 * 24 * time.Hour
	// MaxCap bounds a fleet-wide cap and a rate's limit: the stores keep them in 32 bits.
	MaxCap = math.MaxInt32
)

// ParseRate reads a rate limit written N/DURATION: "100/1s", "5000/1h", "10/m" (a bare unit is
// one of it), with N from 1 to 2³¹−1 and DURATION a Go duration from 1ms to 720h. "0" is no
// limit (the zero Rate), which removes one. It returns a *ValidationError naming field for
// anything else, such as "0/1s" or "abc".
func ParseRate(field, s string) (hoppertype.Rate, error) {
	text := strings.TrimSpace(s)
	if text == "0" {
		return hoppertype.Rate{}, nil
	}
	n, per, ok := strings.Cut(text, "/")
	if !ok {
		return hoppertype.Rate{}, Invalid(field, "%q is not N/DURATION, such as 100/1s or 5000/1h (0 removes the limit)", s)
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if err != nil {
		return hoppertype.Rate{}, Invalid(field, "%q: %q is not a whole number of job starts", s, n)
	}
	per = strings.TrimSpace(per)
	unit := per
	if per != "" && unicode.IsLetter(rune(per[0])) {
		unit = "1" + per // "10/m": one minute
	}
	period, err := time.ParseDuration(unit)
	if err != nil {
		return hoppertype.Rate{}, Invalid(field, "%q: %q is not a duration such as 1s, 1m or 1h", s, per)
	}
	r := hoppertype.Rate{Limit: int(min(max(limit, -1), MaxCap+1)), Period: period}
	if r.IsZero() { // "0/0": only "0" says no limit
		return hoppertype.Rate{}, Invalid(field, "%q: the limit and the period are 0 (0 alone removes the limit)", s)
	}
	if err := CheckRate(field, r); err != nil {
		return hoppertype.Rate{}, err
	}
	return r, nil
}

// CheckRate checks a rate limit: the zero Rate (none), or 1 to 2³¹−1 starts per
// MinRatePeriod to MaxRatePeriod.
func CheckRate(field string, r hoppertype.Rate) error {
	switch {
	case r.IsZero():
		return nil
	case r.Limit < 1 || r.Limit > MaxCap:
		return Invalid(field, "%d starts per period is outside 1–%d (0 removes the limit)", r.Limit, MaxCap)
	case r.Period < MinRatePeriod || r.Period > MaxRatePeriod:
		return Invalid(field, "the period %s is outside 1ms–720h", r.Period)
	case r.Period%time.Microsecond != 0:
		return Invalid(field, "the period %s is not a whole number of microseconds", r.Period)
	}
	return nil
}
