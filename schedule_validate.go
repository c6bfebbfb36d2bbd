package hopper

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/hopperjobs/hopper/internal/schedule"
	"github.com/hopperjobs/hopper/internal/store"
)

// maxJitter bounds Schedule.Jitter.
const maxJitter = 24 * time.Hour

// storedSchedule validates s and returns it as the store keeps it, with defaults applied and
// its fire times starting now (the store keeps an existing schedule's, unless its timing
// changed).
func (c *Client) storedSchedule(s Schedule, source string) (*store.Schedule, error) {
	if err := checkScheduleName(s.Name); err != nil {
		return nil, err
	}
	if err := checkLimited("tz", s.TZ, maxNameLen); err != nil {
		return nil, err
	}
	if err := checkText("cron", s.Cron); err != nil {
		return nil, err
	}
	spec, err := scheduleSpec(s)
	if err != nil {
		return nil, err
	}
	sc := &store.Schedule{
		Name: s.Name, Mode: spec.Kind().String(), TZ: s.TZ, Kind: s.Kind, Queue: s.Queue,
		Headers: s.Headers, Priority: s.Priority, MaxAttempts: s.MaxAttempts, Timeout: s.Timeout,
		CatchUp: string(s.CatchUp), Overlap: string(s.Overlap), Jitter: s.Jitter, Paused: s.Paused, Source: source,
	}
	if spec.Kind() != schedule.KindCron {
		sc.Interval = spec.Interval()
	}
	if spec.Kind() != schedule.KindFixedDelay {
		sc.Spec = spec.String()
	}
	if sc.TZ == "" {
		sc.TZ = "UTC"
	}
	if s.Workflow != nil {
		if err := c.scheduleWorkflow(s, sc); err != nil {
			return nil, err
		}
	} else if err := c.scheduleJob(s, sc); err != nil {
		return nil, err
	}
	if err := checkSchedulePolicies(sc); err != nil {
		return nil, err
	}
	now := c.clock.Now()
	sc.LastFireAt, sc.NextFireAt = now, spec.Next(now)
	return sc, nil
}

func checkScheduleName(name string) error {
	if err := checkQueueName(name); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return &ValidationError{Field: "name", Reason: ve.Reason}
		}
		return err
	}
	return nil
}

// scheduleSpec parses the one timing s sets.
func scheduleSpec(s Schedule) (*schedule.Spec, error) {
	set := 0
	for _, isSet := range []bool{s.Cron != "", s.Every != 0, s.FixedDelay != 0} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return nil, invalid("cron", "set exactly one of cron, every and fixed_delay")
	}
	if _, err := schedule.LoadZone(s.TZ); err != nil {
		return nil, invalid("tz", "%v", err)
	}
	field, text := "cron", s.Cron
	if s.Every != 0 {
		field, text = "every", "@every "+s.Every.String()
	}
	if s.FixedDelay != 0 {
		// The zone only presents a fixed-delay schedule's times; it must still be a zone.
		field, text = "fixed_delay", "@every "+s.FixedDelay.String()
	}
	spec, err := schedule.Parse(text, s.TZ)
	if err != nil {
		return nil, invalid(field, "%v", err)
	}
	if spec.Interval()%time.Millisecond != 0 {
		return nil, invalid(field, "%s is not a whole number of milliseconds", spec.Interval())
	}
	if s.FixedDelay != 0 {
		return schedule.NewInterval(s.FixedDelay, schedule.KindFixedDelay)
	}
	return spec, nil
}

// scheduleJob checks and defaults the job part of s into sc.
func (c *Client) scheduleJob(s Schedule, sc *store.Schedule) error {
	if a, ok := s.Args.(JobArgs); ok && sc.Kind == "" {
		sc.Kind = a.Kind()
	}
	if sc.Queue == "" {
		sc.Queue = DefaultQueue
	}
	if sc.MaxAttempts == 0 {
		sc.MaxAttempts = c.cfg.MaxAttempts
	}
	args, err := scheduleArgs(s.Args, c.cfg.MaxArgsBytes)
	if err != nil {
		return err
	}
	sc.Args = args
	// The checks of an enqueue, on the job a fire would insert.
	return checkInsert(&store.InsertParams{Kind: sc.Kind, Queue: sc.Queue, Priority: sc.Priority,
		MaxAttempts: sc.MaxAttempts, Timeout: sc.Timeout, Headers: sc.Headers}, InsertOpts{}, time.Time{})
}

func scheduleArgs(v any, limit int) (json.RawMessage, error) {
	var b []byte
	switch a := v.(type) {
	case nil:
		b = []byte(`{}`)
	case json.RawMessage:
		b = a
	case RawArgs:
		b = a.JSON
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, invalid("args", "cannot encode as JSON: %v", err)
		}
	}
	if err := checkJSON("args", b); err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, invalid("args", "%d bytes exceed the limit of %d", len(b), limit)
	}
	return b, nil
}

func checkSchedulePolicies(sc *store.Schedule) error {
	catchUp, err := schedule.ParseCatchUp(sc.CatchUp)
	if err != nil {
		return invalid("catch_up", "%q: want skip, last or all", sc.CatchUp)
	}
	overlap, err := schedule.ParseOverlap(sc.Overlap)
	if err != nil {
		return invalid("overlap", "%q: want skip or allow", sc.Overlap)
	}
	if sc.Jitter < 0 || sc.Jitter > maxJitter {
		return invalid("jitter", "%s is outside 0–%s", sc.Jitter, maxJitter)
	}
	sc.CatchUp, sc.Overlap = string(catchUp), string(overlap)
	return nil
}
