package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// starBit is the bit robfig/cron sets on a field written as "*" or "?": day of month and day
// of week are ANDed when either is a star and ORed when both are restricted.
const starBit = 1 << 63

// matcher holds a cron expression as robfig/cron's bit sets: bit n set means value n matches.
type matcher struct {
	second, minute, hour, dom, month, dow uint64
}

// fieldNames name the fields of a 6-field expression; a 5-field one lacks the first.
var fieldNames = []string{"second", "minute", "hour", "day-of-month", "month", "day-of-week"}

func parseCron(spec string) (matcher, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return matcher{}, fmt.Errorf("%w: %q: give the time zone separately, not as a prefix", ErrInvalidSpec, spec)
	}
	fields := strings.Fields(spec)
	if !strings.HasPrefix(spec, "@") && len(fields) != 5 && len(fields) != 6 {
		return matcher{}, fmt.Errorf("%w: %q has %d fields; want 5 (minute hour day-of-month month day-of-week) "+
			"or 6 (a leading seconds field)", ErrInvalidSpec, spec, len(fields))
	}
	sched, err := cronParser.Parse(spec)
	if err != nil {
		if strings.HasPrefix(spec, "@") {
			return matcher{}, fmt.Errorf("%w: %q: unknown descriptor (want @yearly, @annually, @monthly, @weekly, "+
				"@daily, @midnight, @hourly or @every DURATION)", ErrInvalidSpec, spec)
		}
		return matcher{}, fieldError(spec, fields, err)
	}
	ss, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return matcher{}, fmt.Errorf("%w: %q: unsupported schedule type %T", ErrInvalidSpec, spec, sched)
	}
	m := matcher{second: ss.Second, minute: ss.Minute, hour: ss.Hour, dom: ss.Dom, month: ss.Month, dow: ss.Dow}
	if !m.feasible() {
		return matcher{}, fmt.Errorf("%w: %q never fires: no selected month has the selected day of month",
			ErrInvalidSpec, spec)
	}
	return m, nil
}

// fieldError names the field robfig/cron refused: it parses each field alone, the others
// replaced by "*".
func fieldError(spec string, fields []string, err error) error {
	names := fieldNames[6-len(fields):]
	for i, f := range fields {
		probe := make([]string, len(fields))
		for j := range probe {
			probe[j] = "*"
		}
		probe[i] = f
		if _, perr := cronParser.Parse(strings.Join(probe, " ")); perr != nil {
			return fmt.Errorf("%w: %q: %s field %q: %s", ErrInvalidSpec, spec, names[i], f, fieldReason(names[i], perr))
		}
	}
	return fmt.Errorf("%w: %q: %v", ErrInvalidSpec, spec, err)
}

// fieldReason rewords robfig/cron's error for a value that is not a number.
func fieldReason(name string, err error) string {
	if !strings.HasPrefix(err.Error(), "failed to parse int") {
		return err.Error()
	}
	switch name {
	case "month":
		return "want numbers 1-12 or names JAN-DEC, with * , - /"
	case "day-of-week":
		return "want numbers 0-6 (0 is Sunday) or names SUN-SAT, with * , - /"
	}
	return "want numbers, with * , - /"
}

// feasible reports whether some date matches. Only a day of month that no selected month has
// (30 February) can match nothing: a restricted day of week matches every week.
func (m matcher) feasible() bool {
	if m.dom&starBit != 0 || m.dow&starBit == 0 {
		return true
	}
	maxDay := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for mon := 1; mon <= 12; mon++ {
		for d := 1; has(m.month, mon) && d <= maxDay[mon]; d++ {
			if has(m.dom, d) {
				return true
			}
		}
	}
	return false
}

func has(bits uint64, n int) bool { return bits&(1<<uint(n)) != 0 }

func (m matcher) dayMatches(c time.Time) bool {
	dom, dow := has(m.dom, c.Day()), has(m.dow, int(c.Weekday()))
	if m.dom&starBit != 0 || m.dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// next returns the first civil time at or after c (a whole second, coded in UTC, where every
// day has 24 hours) that matches, or false once the search passes the end of year limit.
func (m matcher) next(c time.Time, limit int) (time.Time, bool) {
	for c.Year() <= limit {
		switch {
		case !has(m.month, int(c.Month())):
			c = time.Date(c.Year(), c.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !m.dayMatches(c):
			c = time.Date(c.Year(), c.Month(), c.Day()+1, 0, 0, 0, 0, time.UTC)
		case !has(m.hour, c.Hour()):
			c = c.Truncate(time.Hour).Add(time.Hour)
		case !has(m.minute, c.Minute()):
			c = c.Truncate(time.Minute).Add(time.Minute)
		case !has(m.second, c.Second()):
			c = c.Add(time.Second)
		default:
			return c, true
		}
	}
	return time.Time{}, false
}
