package server

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// A streamed job's credit is free once the worker reports its outcome, before the outcome is
// written; the stream keeps its lease until then, and a stream that closes meanwhile leaves it
// to that write rather than rescuing it.
func TestReportedJobFreesItsCreditButKeepsItsLease(t *testing.T) {
	r := &registry{workers: map[string]*workerInfo{}, streams: map[string]*stream{}, byJob: map[hopper.LeaseRef]*stream{}}
	st := r.open("w", "q", nil, 2, time.Minute, time.Now())
	a, b := hopper.LeaseRef{ID: "a", Token: 1}, hopper.LeaseRef{ID: "b", Token: 1}
	for _, ref := range []hopper.LeaseRef{a, b} {
		st.hold(ref)
		st.sent(ref)
	}
	require.Equal(t, 0, st.free())
	r.reporting(a)
	require.Equal(t, 1, st.free(), "the credit of a reported job is free")
	r.reporting(a)
	require.Equal(t, 1, st.free(), "reported once")
	r.reporting(hopper.LeaseRef{ID: "a", Token: 2})
	require.Equal(t, 1, st.free(), "another attempt's report frees nothing")
	require.Len(t, st.renewals()[time.Minute], 2, "its lease is still kept")
	r.done(a, outcomeCompleted)
	require.Equal(t, 1, st.free())
	require.Len(t, st.renewals()[time.Minute], 1)

	r.reporting(b)
	pushed, unsent := r.close(st)
	require.Empty(t, pushed, "a reported job is left to its outcome's write")
	require.Empty(t, unsent)
}
