package schedule_test

import (
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/schedule"
)

// A daily 02:30 in New York around the 2026 spring-forward: 02:30 does not exist on 8 March,
// so that day's run is at 03:00 EDT, the first instant after the jump.
func ExampleSpec_Next() {
	s, err := schedule.Parse("30 2 * * *", "America/New_York")
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-03-08T03:00:00-04:00
	// 2026-03-09T02:30:00-04:00
	// 2026-03-10T02:30:00-04:00
}

// A leader that was down for a few hours fires an hourly schedule according to its catch-up
// policy, then stores through as the schedule's last fire time.
func ExampleDue() {
	s, err := schedule.Parse("@hourly", "UTC")
	if err != nil {
		panic(err)
	}
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := time.Date(2026, 1, 1, 3, 20, 0, 0, time.UTC)
	for _, policy := range []schedule.CatchUp{schedule.CatchUpSkip, schedule.CatchUpLast, schedule.CatchUpAll} {
		fires, through := schedule.Due(s, last, now, policy, time.Minute)
		fmt.Println(policy, len(fires), "fire(s), through", through.Format("15:04"))
	}
	// Output:
	// skip 0 fire(s), through 03:00
	// last 1 fire(s), through 03:00
	// all 3 fire(s), through 03:00
}
