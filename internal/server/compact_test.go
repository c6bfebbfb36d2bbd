package server_test

import (
	"testing"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// KindService.Compact replaces a group's waiting jobs by one, recorded as an operator's
// change; Lineage reads it both ways; bad input is INVALID_ARGUMENT naming the field.
func TestKindServiceCompact(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	var replaced []string
	for _, args := range []string{`{"n":1}`, `{"n":2}`} {
		res, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "pdf", Args: args, GroupKey: "doc-7"}})
		require.NoError(t, err)
		replaced = append(replaced, res.GetJob().GetId())
	}
	for _, tc := range []struct {
		req   *hopperv1.KindServiceCompactRequest
		field string
	}{
		{&hopperv1.KindServiceCompactRequest{}, "kind"},
		{&hopperv1.KindServiceCompactRequest{Kind: "pdf", Over: -1}, "over"},
		{&hopperv1.KindServiceCompactRequest{Kind: "pdf", Merge: "squash"}, "merge"},
		{&hopperv1.KindServiceCompactRequest{Kind: "pdf", GroupKey: "\x00"}, "group_key"},
	} {
		_, err := e.kinds.Compact(ctx, tc.req)
		requireRPCCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid "+tc.field, "%v", tc.req)
	}

	res, err := e.kinds.Compact(ctx, &hopperv1.KindServiceCompactRequest{Kind: "pdf", Merge: "replace"})
	require.NoError(t, err)
	require.Equal(t, int32(1), res.GetGroups())
	require.Equal(t, int32(2), res.GetJobs())
	require.Len(t, res.GetCompacted(), 1)
	g := res.GetCompacted()[0]
	require.Equal(t, "doc-7", g.GetGroupKey())
	require.Equal(t, replaced, g.GetReplaced())
	job := e.get(t, g.GetNewJobId())
	require.JSONEq(t, `{"n":2}`, job.GetArgs())
	require.Equal(t, "queued", job.GetState())
	old := e.get(t, replaced[0])
	require.Equal(t, "canceled", old.GetState())
	events, err := e.jobs.Events(ctx, &hopperv1.EventsRequest{Id: replaced[0]})
	require.NoError(t, err)
	last := events.GetEvents()[len(events.GetEvents())-1]
	require.Equal(t, "operator", last.GetActor())
	require.Equal(t, "compacted into "+g.GetNewJobId(), last.GetReason())

	lin, err := e.kinds.Lineage(ctx, &hopperv1.KindServiceLineageRequest{Id: g.GetNewJobId()})
	require.NoError(t, err)
	require.Equal(t, replaced, lin.GetCompactedFrom())
	require.Empty(t, lin.GetCompactedInto())
	lin, err = e.kinds.Lineage(ctx, &hopperv1.KindServiceLineageRequest{Id: replaced[1]})
	require.NoError(t, err)
	require.Equal(t, g.GetNewJobId(), lin.GetCompactedInto())
	_, err = e.kinds.Lineage(ctx, &hopperv1.KindServiceLineageRequest{})
	requireRPCCode(t, connect.CodeInvalidArgument, err)
}

// KindService.Set stores a kind's compaction setting, List shows it, 0 removes it; bad
// values are INVALID_ARGUMENT naming the field, and change nothing.
func TestKindServiceSetCompaction(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	over := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		req   *hopperv1.KindServiceSetRequest
		field string
	}{
		{&hopperv1.KindServiceSetRequest{Kind: "pdf", CompactOver: over(-1)}, "compact_over"},
		{&hopperv1.KindServiceSetRequest{Kind: "pdf", CompactOver: over(3), CompactMerge: "squash"}, "compact_merge"},
		{&hopperv1.KindServiceSetRequest{Kind: "pdf", CompactMerge: "append", MaxRunning: over(2)}, "compact_merge"},
	} {
		_, err := e.kinds.Set(ctx, tc.req)
		requireRPCCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid "+tc.field)
	}
	list, err := e.kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetKinds(), "nothing changed")

	_, err = e.kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", CompactOver: over(5), CompactMerge: "append"})
	require.NoError(t, err)
	list, err = e.kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetKinds(), 1)
	require.Equal(t, int32(5), list.GetKinds()[0].GetCompactOver())
	require.Equal(t, "append", list.GetKinds()[0].GetCompactMerge())
	require.Zero(t, list.GetKinds()[0].GetMaxRunning(), "a request with compact_over only leaves the cap alone")

	_, err = e.kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", CompactOver: over(0)})
	require.NoError(t, err)
	list, err = e.kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetKinds())
}
