package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Text: what a store keeps of the strings it is given. Valid UTF-8 of any script, emoji,
// U+FFFD and long values come back byte for byte. Bytes a store cannot keep (a NUL byte or
// bytes that are not UTF-8, which PostgreSQL's text refuses) are the client's to refuse first;
// a store that still receives them either keeps them exactly or refuses them with
// store.ErrInvalid, never with an error that reads as its own failure.
func testText(t *testing.T, opener Opener) {
	parallel(t, opener, "AwkwardButValidRoundTrips", textAwkwardRoundTrips)
	parallel(t, opener, "BadBytesKeptOrInvalid", textBadBytes)
}

// Awkward but valid strings: emoji (4-byte UTF-8), the replacement character, right-to-left
// text with its marks, combining characters, an escaped NUL inside JSON.
const (
	awkward     = "📨 \uFFFD שלום مرحبا\u200f e\u0301"
	awkwardKind = "📨-שלום-\uFFFD"
)

func textAwkwardRoundTrips(t *testing.T, b *bundle) {
	ctx := t.Context()
	key := strings.Repeat("é", 256) // 512 bytes, the client's limit for keys
	args := json.RawMessage(`{"text":"` + awkward + `","nul":"\u0000"}`)
	p := params(t, withKind(awkwardKind), inQueue("q-ü-"+newID(t)), withArgs(string(args)), withKey(key, day),
		withGroup(awkward))
	p.Headers = map[string]string{"x-émoji": "🚀\uFFFD", "rtl": "مرحبا"}
	job := b.insertMany(t, p)[0].Job

	got := b.get(t, job.ID)
	require.Equal(t, awkwardKind, got.Kind)
	require.Equal(t, p.Queue, got.Queue)
	require.Equal(t, string(args), string(got.Args))
	require.Equal(t, key, got.IdempotencyKey)
	require.Equal(t, awkward, got.GroupKey)
	require.Equal(t, p.Headers, got.Headers)

	listed := b.listAll(t, store.ListParams{Kinds: []string{awkwardKind}, Queues: []string{p.Queue}})
	require.Equal(t, []string{job.ID}, ids(listed))
	repeat := b.insertMany(t, params(t, withKind(awkwardKind), inQueue(p.Queue), withArgs(string(args)), withKey(key, day)))
	require.True(t, repeat[0].Existing, "the key finds its job")

	worker := "worker-🚀-" + awkward
	claimed := b.claimAs(t, &store.ClaimParams{Queue: p.Queue, Kinds: []string{awkwardKind}, Limit: 1,
		WorkerID: worker, LeaseDuration: defaultLease})
	require.Len(t, claimed, 1)
	require.Equal(t, worker, claimed[0].WorkerID)
	require.NoError(t, b.store.JobProgress(ctx, &store.ProgressParams{ID: job.ID, Token: claimed[0].Token,
		Percent: 50, Message: awkward}))
	require.Equal(t, awkward, b.get(t, job.ID).ProgressMessage)

	fail := finishing(claimed[0], hoppertype.StateScheduled)
	fail.Error, fail.Stack, fail.Reason, fail.RunAt = "boom "+awkward, "stack "+awkward, "retry "+awkward, b.clock.Now()
	require.NoError(t, b.finish(t, fail))
	attempts := b.attempts(t, job.ID)
	require.Len(t, attempts, 1)
	require.Equal(t, worker, attempts[0].WorkerID)
	require.Equal(t, "boom "+awkward, attempts[0].Error)
	require.Equal(t, "stack "+awkward, attempts[0].Stack)

	_, err := b.store.JobCancel(ctx, &store.CancelParams{ID: job.ID, Actor: hoppertype.ActorOperator, Reason: "no " + awkward})
	require.NoError(t, err)
	evs := b.events(t, job.ID)
	require.Equal(t, "retry "+awkward, evs[len(evs)-2].Reason)
	require.Equal(t, "no "+awkward, evs[len(evs)-1].Reason)
}

// badStrings hold the bytes PostgreSQL's text type refuses.
var badStrings = map[string]string{"NUL": "a\x00b", "not UTF-8": "caf\xe9"}

// keptOrInvalid requires err to be nil or to match store.ErrInvalid (or, for a read or a
// call naming a job, ErrNotFound), and reports whether the store accepted the call.
func keptOrInvalid(t *testing.T, err error, what string, notFound bool) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if notFound && errors.Is(err, store.ErrNotFound) {
		return true
	}
	require.ErrorIs(t, err, store.ErrInvalid, "%s: want nil or ErrInvalid, got %v", what, err)
	return false
}

func textBadBytes(t *testing.T, b *bundle) {
	ctx := t.Context()
	for name, bad := range badStrings {
		t.Run(name, func(t *testing.T) {
			inserts := map[string]*store.InsertParams{
				"kind":            params(t, withKind(bad)),
				"queue":           params(t, inQueue(bad)),
				"idempotency key": params(t, withKey(bad, day)),
				"group key":       params(t, withGroup(bad)),
				"header name":     params(t),
				"header value":    params(t),
			}
			inserts["header name"].Headers = map[string]string{bad: "v"}
			inserts["header value"].Headers = map[string]string{"h": bad}
			for what, p := range inserts {
				res, err := b.store.JobInsertMany(ctx, []*store.InsertParams{p})
				if keptOrInvalid(t, err, "insert with a bad "+what, false) {
					got := b.get(t, res[0].Job.ID)
					require.Equal(t, []any{p.Kind, p.Queue, p.IdempotencyKey, p.GroupKey, p.Headers},
						[]any{got.Kind, got.Queue, got.IdempotencyKey, got.GroupKey, got.Headers}, "kept exactly: %s", what)
				} else {
					_, err := b.store.JobGet(ctx, p.ID)
					require.ErrorIs(t, err, store.ErrNotFound, "nothing stored: %s", what)
				}
			}

			queue := "q-" + newID(t)
			job := b.insert(t, inQueue(queue))
			_, err := b.store.JobGet(ctx, bad)
			keptOrInvalid(t, err, "get", true)
			_, err = b.store.JobEvents(ctx, bad)
			keptOrInvalid(t, err, "events", true)
			_, err = b.store.JobAttempts(ctx, bad)
			keptOrInvalid(t, err, "attempts", true)
			_, err = b.store.JobList(ctx, &store.ListParams{Kinds: []string{bad}})
			keptOrInvalid(t, err, "list by kind", false)
			_, err = b.store.JobList(ctx, &store.ListParams{Queues: []string{bad}})
			keptOrInvalid(t, err, "list by queue", false)
			_, err = b.store.JobCancel(ctx, &store.CancelParams{ID: bad, Actor: hoppertype.ActorAPI})
			keptOrInvalid(t, err, "cancel an unknown id", true)
			for what, fenced := range b.fencedCalls(t, bad, 1) {
				keptOrInvalid(t, fenced, what+" of an unknown id", true)
			}
			for what, p := range map[string]*store.ClaimParams{
				"claim from a queue": {Queue: bad + "-none"}, "claim kinds": {Queue: queue, Kinds: []string{bad}},
			} {
				p.Limit, p.WorkerID, p.LeaseDuration = 1, workerA, defaultLease
				jobs, _, err := b.store.JobClaim(ctx, p)
				keptOrInvalid(t, err, what, false)
				require.Empty(t, jobs, what)
			}
			_, _, err = b.store.JobClaim(ctx, &store.ClaimParams{Queue: queue, Limit: 1, WorkerID: bad, LeaseDuration: defaultLease})
			if !keptOrInvalid(t, err, "claim as a worker", false) {
				require.Equal(t, hoppertype.StateQueued, b.get(t, job.ID).State, "a refused claim changes nothing")
			}
			keptOrInvalid(t, b.store.QueueSetPaused(ctx, bad, true), "pause a queue", false)
			keptOrInvalid(t, b.store.LimitSet(ctx, &store.LimitParams{Scope: store.LimitKind, Name: bad, MaxRunning: 1}), "set a limit", false)
			keptOrInvalid(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: bad, Host: bad, StartedAt: b.clock.Now()}), "node heartbeat", false)

			queued := b.insert(t)
			_, err = b.store.JobCancel(ctx, &store.CancelParams{ID: queued.ID, Actor: hoppertype.ActorAPI, Reason: bad})
			if !keptOrInvalid(t, err, "cancel with a bad reason", false) {
				require.Equal(t, hoppertype.StateQueued, b.get(t, queued.ID).State, "a refused cancel changes nothing")
			}
			_, err = b.store.KeyRevoke(ctx, bad)
			keptOrInvalid(t, err, "revoke a key", true)
			_, err = b.store.ScheduleGet(ctx, bad)
			keptOrInvalid(t, err, "get a schedule", true)
			_, err = b.store.JobReplay(ctx, &store.ReplayParams{SourceID: bad, NewID: newID(t), By: "t", Actor: hoppertype.ActorAPI})
			keptOrInvalid(t, err, "replay", true)
		})
	}
}
