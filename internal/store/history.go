package store

import "github.com/hopperjobs/hopper/hoppertype"

// SettleCreation sets the state of a job's creating event, given its history oldest first.
// A store that reads the creation from the job row (which keeps who created the job, and
// when, but not the state it started in) names the row's current state there; the state
// the job was created in is the one its next transition left.
func SettleCreation(events []*hoppertype.Event) {
	if len(events) > 1 && events[0].From == "" {
		events[0].To = events[1].From
	}
}
