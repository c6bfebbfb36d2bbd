package server

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// A streamed job's credit is free once the worker reports its outcome, before the outcome is
// written; a closed stream gives back only the jobs it never sent (the others are their
// worker's to report on).
func TestReportedJobFreesItsCredit(t *testing.T) {
	r := &registry{workers: map[string]*workerInfo{}, streams: map[string]*stream{}, byJob: map[hopper.LeaseRef]*stream{}}
	st := r.open("w", "q", nil, 3, time.Minute, time.Now())
	a, b, c := hopper.LeaseRef{ID: "a", Token: 1}, hopper.LeaseRef{ID: "b", Token: 1}, hopper.LeaseRef{ID: "c", Token: 1}
	for _, ref := range []hopper.LeaseRef{a, b, c} {
		st.hold(ref)
	}
	st.sent(a)
	st.sent(b)
	require.Equal(t, 0, st.free())
	r.reporting(a)
	require.Equal(t, 1, st.free(), "the credit of a reported job is free")
	r.reporting(a)
	require.Equal(t, 1, st.free(), "reported once")
	r.reporting(hopper.LeaseRef{ID: "b", Token: 2})
	require.Equal(t, 1, st.free(), "another attempt's report frees nothing")
	r.done(a, outcomeCompleted)
	require.Equal(t, 1, st.free())
	require.Equal(t, []hopper.LeaseRef{c}, r.close(st), "only the unsent job goes back")
}
