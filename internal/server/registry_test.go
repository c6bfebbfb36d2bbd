package server

import (
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/workerapi"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

// A streamed job's credit is free once the worker reports its outcome, before the outcome is
// written; a closed stream gives back only the jobs it never sent (the others are their
// worker's to report on).
func TestReportedJobFreesItsCredit(t *testing.T) {
	r := newRegistry()
	freed := map[string]int{}
	st := r.open(&stream{worker: "w", queues: []string{"q"}, credit: 3, lease: time.Minute,
		freed: func(q, _ string) { freed[q]++ }}, time.Now())
	a, b, c := workerapi.LeaseRef{ID: "a", Token: 1}, workerapi.LeaseRef{ID: "b", Token: 1}, workerapi.LeaseRef{ID: "c", Token: 1}
	for _, ref := range []workerapi.LeaseRef{a, b, c} {
		st.hold(rowOf(ref, "q"))
	}
	st.sent(a)
	st.sent(b)
	r.reporting(a)
	require.Equal(t, 1, freed["q"], "the credit of a reported job is free")
	r.reporting(a)
	require.Equal(t, 1, freed["q"], "reported once")
	r.reporting(workerapi.LeaseRef{ID: "b", Token: 2})
	require.Equal(t, 1, freed["q"], "another attempt's report frees nothing")
	r.done(a, outcomeCompleted)
	require.Equal(t, 1, freed["q"], "freed when reported, not again when written")
	r.done(b, outcomeLost)
	require.Equal(t, 2, freed["q"], "a job that ends unreported frees its credit then")
	unsent, unreported := r.close(st, false)
	require.Equal(t, []*hopper.JobRow{rowOf(c, "q")}, unsent, "only the unsent job goes back")
	require.Empty(t, unreported)
}

// A stream closed because its caller may no longer have it gives back the jobs it pushed and
// that were not reported on too.
func TestStreamClosedForItsKeyGivesBackWhatWasPushed(t *testing.T) {
	r := newRegistry()
	st := r.open(&stream{worker: "w", queues: []string{"q"}, credit: 3, lease: time.Minute}, time.Now())
	a, b, c := workerapi.LeaseRef{ID: "a", Token: 1}, workerapi.LeaseRef{ID: "b", Token: 1}, workerapi.LeaseRef{ID: "c", Token: 1}
	for _, ref := range []workerapi.LeaseRef{a, b, c} {
		st.hold(rowOf(ref, "q"))
		st.sent(ref)
	}
	r.reporting(a)
	unsent, unreported := r.close(st, true)
	require.Empty(t, unsent)
	require.ElementsMatch(t, []workerapi.LeaseRef{b, c}, unreported, "the reported job is its worker's")
}

// Contract 15: a held worker's streams have no free credit and its waiting claims end at
// once; the hold lapses unless repeated; letting the worker go wakes its streams.
func TestHeldWorkerHasNoCreditUntilLetGo(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := newRegistry()
	done := r.seen("w", []string{"q"}, nil, nil, now, true)
	defer done(nil)
	woken := 0
	st := r.open(&stream{worker: "w", queues: []string{"q"}, credit: 3, lease: time.Minute, woken: func() { woken++ }}, now)
	require.Zero(t, st.heldUntil(now))

	waiting, endWaiting := r.untilHeld(t.Context(), "w", []string{"q"}, now) // a claim waits for jobs
	require.NoError(t, waiting.Err())

	require.True(t, r.hold("w", "q", true, now))
	select { // a waiting claim ends when its worker is held
	case <-waiting.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting claim did not end when its worker was held")
	}
	endWaiting()
	require.Equal(t, now.Add(holdTTL), st.heldUntil(now))
	claimCtx, end := r.untilHeld(t.Context(), "w", []string{"q"}, now)
	require.Error(t, claimCtx.Err(), "a held worker's claims end at once")
	end()
	queues, held := r.queues(now)
	require.Equal(t, []string{"q"}, queues)
	require.Equal(t, []string{"q"}, held)

	require.False(t, r.hold("w", "q", true, now.Add(10*time.Second)), "repeated: no change")
	require.False(t, st.heldUntil(now.Add(holdTTL)).IsZero(), "the repeat extended the hold")
	require.Zero(t, st.heldUntil(now.Add(10*time.Second+holdTTL)), "a hold not repeated lapses")
	claimCtx, end = r.untilHeld(t.Context(), "w", []string{"q"}, now.Add(10*time.Second+holdTTL))
	require.NoError(t, claimCtx.Err(), "claims go on after the lapse")

	require.True(t, r.hold("w", "q", true, now.Add(time.Minute)))
	select { // a waiting claim ends when its worker is held
	case <-claimCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting claim did not end when its worker was held")
	}
	end()
	before := woken
	require.True(t, r.hold("w", "q", false, now.Add(time.Minute)))
	require.Greater(t, woken, before, "letting the worker go wakes its stream")
	require.Zero(t, st.heldUntil(now.Add(time.Minute)))
	queues, held = r.queues(now.Add(time.Minute))
	require.Equal(t, []string{"q"}, queues)
	require.Empty(t, held)
}

// A remote worker counts for its queue while it has a stream or a poll open, was seen
// recently, or is held; every live worker of a queue must be held for it to be held.
func TestRemoteQueuesForTheHeartbeat(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := newRegistry()
	r.seen("a", []string{"mail"}, nil, nil, now, false)(nil) // a poll, over
	r.hold("a", "mail", true, now)
	r.seen("b", []string{"mail"}, nil, nil, now, false)(nil)
	r.seen("c", []string{"old"}, nil, nil, now.Add(-time.Hour), false)(nil) // gone
	queues, held := r.queues(now)
	require.Equal(t, []string{"mail"}, queues)
	require.Empty(t, held, "b works mail and is not held")
	r.hold("a", "mail", true, now.Add(20*time.Second)) // repeated
	queues, held = r.queues(now.Add(remoteLive))
	require.Equal(t, []string{"mail"}, queues, "b is gone; a is still held")
	require.Equal(t, []string{"mail"}, held)
	queues, held = r.queues(now.Add(20*time.Second + holdTTL + remoteLive))
	require.Empty(t, queues, "a's hold lapsed long ago: a is gone too")
	require.Empty(t, held)
}

// The dashboard marks a remote worker stale by the rule its node's heartbeat uses: no stream
// or poll open, not seen within remoteLive, not held.
func TestDashboardMarksStaleWorkers(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	s := &Server{reg: newRegistry(), clock: clk}
	s.reg.seen("polled", []string{"mail"}, nil, nil, now, false)(nil) // a poll, over
	s.reg.seen("streaming", []string{"mail"}, nil, nil, now, true)    // a stream, open
	stale := func() map[string]bool {
		ws, _ := remoteSource{s}.Remote(t.Context())
		out := map[string]bool{}
		for _, w := range ws {
			out[w.Name] = w.Stale
		}
		return out
	}
	require.Equal(t, map[string]bool{"polled": false, "streaming": false}, stale())
	clk.Advance(remoteLive - time.Second)
	require.Equal(t, map[string]bool{"polled": false, "streaming": false}, stale())
	clk.Advance(time.Second)
	require.Equal(t, map[string]bool{"polled": true, "streaming": false}, stale(), "no call for remoteLive")
	queues, _ := s.reg.queues(clk.Now())
	require.Equal(t, []string{"mail"}, queues, "the open stream still works mail")
}

// The dashboard shows the kinds a remote worker takes in batches, as its last request named
// them.
func TestDashboardShowsBatchKinds(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &Server{reg: newRegistry(), clock: clock.NewFake(now)}
	s.reg.seen("batcher", []string{"mail"}, []string{"digest", "send"},
		[]workerapi.BatchKind{{Kind: "digest", MaxJobs: 10}}, now, true)
	s.reg.seen("plain", []string{"mail"}, []string{"send"}, nil, now, false)(nil)
	ws, _ := remoteSource{s}.Remote(t.Context())
	got := map[string][]string{}
	for _, w := range ws {
		got[w.Name] = w.BatchKinds
	}
	require.Equal(t, map[string][]string{"batcher": {"digest"}, "plain": nil}, got)
}

// AdminService.ListWorkers (hopper workers ls) names them too.
func TestListWorkersShowsBatchKinds(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &Server{reg: newRegistry(), clock: clock.NewFake(now)}
	s.reg.seen("batcher", []string{"mail"}, []string{"digest", "send"},
		[]workerapi.BatchKind{{Kind: "digest", MaxJobs: 10}}, now, true)
	s.reg.seen("plain", []string{"mail"}, []string{"send"}, nil, now, false)(nil)
	res, err := (&adminService{s: s}).ListWorkers(t.Context(), &hopperv1.ListWorkersRequest{})
	require.NoError(t, err)
	got := map[string][]string{}
	for _, w := range res.GetWorkers() {
		got[w.GetName()] = w.GetBatchKinds()
	}
	require.Equal(t, map[string][]string{"batcher": {"digest"}, "plain": nil}, got)
}

// A stream on several queues counts its held jobs per queue, and a hold of its worker on any
// of its queues holds the whole stream (it is the worker's process that is busy).
func TestStreamOnSeveralQueues(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := newRegistry()
	queues := []string{"reports", "emails"}
	done := r.seen("w", queues, nil, nil, now, true)
	freed := map[string]int{}
	st := r.open(&stream{worker: "w", queues: queues, credit: 10, lease: time.Minute, freed: func(q, _ string) { freed[q]++ }}, now)
	a, b, c := workerapi.LeaseRef{ID: "a", Token: 1}, workerapi.LeaseRef{ID: "b", Token: 1}, workerapi.LeaseRef{ID: "c", Token: 1}
	st.hold(rowOf(a, "reports"))
	st.hold(rowOf(b, "reports"))
	st.hold(rowOf(c, "emails"))
	r.reporting(b)
	r.done(c, outcomeLost)
	require.Equal(t, map[string]int{"reports": 1, "emails": 1}, freed, "credit comes back to the job's queue")

	done([]*hopper.JobRow{{Queue: "reports"}, {Queue: "reports"}, {Queue: "emails"}})
	_, workers := r.snapshot(now)
	require.Len(t, workers, 2)
	require.Equal(t, "emails", workers[0].queue)
	require.EqualValues(t, 1, workers[0].activated)
	require.EqualValues(t, 2, workers[1].activated)

	claimCtx, end := r.untilHeld(t.Context(), "w", queues, now)
	defer end()
	require.True(t, r.hold("w", "emails", true, now))
	require.Error(t, claimCtx.Err(), "a claim over both queues ends")
	require.Equal(t, now.Add(holdTTL), st.heldUntil(now))
	require.True(t, r.hold("w", "emails", false, now))
	require.Zero(t, st.heldUntil(now))
}

// rowOf is a claimed job of queue for the attempt ref names.
func rowOf(ref workerapi.LeaseRef, queue string) *hopper.JobRow {
	return &hopper.JobRow{ID: ref.ID, Token: ref.Token, Queue: queue, Kind: "k"}
}

// A job that could not be pushed goes to the open stream of its queue and kind, not held
// back, with the most credit free; none other, and not back to the stream it came from.
func TestRerouteOffersToAStreamThatTakesTheJob(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := newRegistry()
	offered := map[string][]string{}
	open := func(worker string, queues, kinds []string, credit int) *stream {
		return r.open(&stream{worker: worker, queues: queues, kinds: kinds, credit: credit, lease: time.Minute,
			offer: func(q string, jobs []*hopper.JobRow) bool {
				for _, j := range jobs {
					offered[worker] = append(offered[worker], q+"/"+j.ID)
				}
				return true
			}}, now)
	}
	from := open("broken", []string{"q"}, nil, 5)
	open("other-queue", []string{"elsewhere"}, nil, 5)
	open("other-kind", []string{"q"}, []string{"video"}, 5)
	full := open("full", []string{"q"}, nil, 1)
	full.hold(rowOf(workerapi.LeaseRef{ID: "busy", Token: 1}, "q"))
	open("roomy", []string{"q"}, []string{"k"}, 2)
	open("held", []string{"q"}, nil, 9) // the most credit free, but its worker is held back
	r.hold("held", "q", true, now)

	jobs := []*hopper.JobRow{{ID: "a", Queue: "q", Kind: "k"}, {ID: "b", Queue: "q", Kind: "k"}, {ID: "c", Queue: "q", Kind: "k"}}
	left := r.reroute(from, jobs, now)
	require.Equal(t, map[string][]string{"roomy": {"q/a", "q/b"}}, offered, "the one stream that takes them, up to its free credit")
	require.Equal(t, []*hopper.JobRow{jobs[2]}, left, "the rest go back to the queue")
	require.EqualValues(t, 2, r.push.rerouted.Load())
}

// A stream that caps a kind (kind_concurrency) is offered jobs of that kind only within its
// cap's room, which they take; a stream that refuses an offer gives the room back.
func TestRerouteKeepsToAStreamsKindCap(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := newRegistry()
	var offered []string
	accept := true
	from := r.open(&stream{worker: "broken", queues: []string{"q"}, credit: 5, lease: time.Minute}, now)
	capped := r.open(&stream{worker: "capped", queues: []string{"q"}, kinds: []string{"k", "x"}, credit: 10,
		lease: time.Minute, caps: claim.NewKindCaps(map[string]int{"k": 2}),
		offer: func(_ string, jobs []*hopper.JobRow) bool {
			for _, j := range jobs {
				offered = append(offered, j.ID)
			}
			return accept
		}}, now)
	require.True(t, capped.caps.Take("k"), "one k-job held already")
	jobs := []*hopper.JobRow{{ID: "a", Queue: "q", Kind: "k"}, {ID: "b", Queue: "q", Kind: "k"}, {ID: "c", Queue: "q", Kind: "x"}}
	left := r.reroute(from, jobs, now)
	require.Equal(t, []string{"a", "c"}, offered, "one k-job fits the cap's room; x has no cap")
	require.Equal(t, []*hopper.JobRow{jobs[1]}, left)
	require.Equal(t, 2, capped.caps.Held("k"), "the offered job is counted")

	capped.caps.Free("k", 1)
	accept, offered = false, nil
	left = r.reroute(from, jobs[:1], now)
	require.Equal(t, []string{"a"}, offered)
	require.Equal(t, jobs[:1], left, "refused: back to the queue")
	require.Equal(t, 1, capped.caps.Held("k"), "the room it took is given back")
}
