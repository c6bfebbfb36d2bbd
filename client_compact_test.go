package hopper

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CompactKind's input is checked like every other: the field is named, nothing changes.
func TestCompactKindIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	for range 2 {
		_, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{GroupKey: "g"})
		require.NoError(t, err)
	}
	cases := []struct {
		name  string
		kind  string
		opts  *CompactOpts
		actor Actor
		field string
	}{
		{"empty kind", "", nil, ActorAPI, "kind"},
		{"group key too long", "send-email", &CompactOpts{GroupKey: strings.Repeat("k", maxKeyLen+1)}, ActorAPI, "group_key"},
		{"group key with NUL", "send-email", &CompactOpts{GroupKey: nul}, ActorAPI, "group_key"},
		{"negative over", "send-email", &CompactOpts{Over: -1}, ActorAPI, "over"},
		{"over too large", "send-email", &CompactOpts{Over: math.MaxInt32 + 1}, ActorAPI, "over"},
		{"unknown policy", "send-email", &CompactOpts{Merge: "squash"}, ActorAPI, "merge"},
		{"unknown actor", "send-email", nil, "someone", "actor"},
	}
	for _, tc := range cases {
		_, err := b.client.CompactKindBy(ctx, tc.kind, tc.opts, tc.actor)
		require.ErrorIs(t, err, ErrInvalid, tc.name)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.field, ve.Field, tc.name)
	}
	queued, err := b.client.List(ctx, &ListParams{States: []JobState{StateQueued}})
	require.NoError(t, err)
	require.Len(t, queued.Jobs, 2, "nothing compacted")
}

// CompactKind replaces a group's waiting jobs, counts what it did, reports refused groups,
// and the lineage is readable both ways; the replaced jobs are kept for the result TTL.
func TestCompactKind(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) { c.ResultTTL = 2 * time.Hour })
	ctx := t.Context()
	var replaced []string
	for _, to := range []string{"a", "b", "c"} {
		res, err := b.client.Enqueue(ctx, sendEmail{To: to}, &InsertOpts{GroupKey: "g", Priority: 2})
		require.NoError(t, err)
		replaced = append(replaced, res.Job.ID)
	}
	for _, to := range []string{"x", "y"} { // a group whose jobs are not lists: append refuses it
		_, err := b.client.Enqueue(ctx, sendEmail{To: to}, &InsertOpts{GroupKey: "h"})
		require.NoError(t, err)
	}

	res, err := b.client.CompactKind(ctx, "send-email", &CompactOpts{GroupKey: "g", Merge: MergeReplace})
	require.NoError(t, err)
	require.Equal(t, 1, res.Groups)
	require.Equal(t, 3, res.Jobs)
	require.Len(t, res.Compacted, 1)
	g := res.Compacted[0]
	require.Equal(t, "g", g.GroupKey)
	require.Equal(t, replaced, g.Replaced)
	job, err := b.client.Get(ctx, g.NewJobID)
	require.NoError(t, err)
	require.JSONEq(t, `{"to":"c"}`, string(job.Args))
	require.Equal(t, 2, job.Priority)
	require.Equal(t, StateQueued, job.State)

	from, err := b.client.CompactedFrom(ctx, g.NewJobID)
	require.NoError(t, err)
	require.Equal(t, replaced, from)
	for _, id := range replaced {
		old, err := b.client.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, StateCanceled, old.State)
		require.True(t, old.ExpiresAt.Equal(b.clock.Now().Add(2*time.Hour)), "kept for the result TTL")
		into, err := b.client.CompactedInto(ctx, id)
		require.NoError(t, err)
		require.Equal(t, g.NewJobID, into)
		events, err := b.client.Events(ctx, id)
		require.NoError(t, err)
		last := events[len(events)-1]
		require.Equal(t, ActorAPI, last.Actor)
		require.Equal(t, "compacted into "+g.NewJobID, last.Reason)
	}

	res, err = b.client.CompactKindBy(ctx, "send-email", &CompactOpts{Merge: MergeAppend}, ActorOperator)
	require.NoError(t, err)
	require.Zero(t, res.Groups)
	require.Len(t, res.Refused, 1)
	require.Equal(t, "h", res.Refused[0].GroupKey)
	require.NotEmpty(t, res.Refused[0].JobID)
	require.Contains(t, res.Refused[0].Reason, "not a list")

	res, err = b.client.CompactKind(ctx, "send-email", &CompactOpts{Over: 2})
	require.NoError(t, err)
	require.Zero(t, res.Groups, "no group has more than two waiting")
	res, err = b.client.CompactKind(ctx, "send-email", nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.Groups, "h, by keep; g holds one job")
	require.Equal(t, 2, res.Jobs)
}

// A kind's compaction setting is validated, listed and removed; the leader compacts the
// kind's groups over it, every RescueInterval of the fake clock, recorded as its doing.
func TestLeaderCompactsKindsThatAskForIt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	for _, tc := range []struct {
		kind  string
		c     Compaction
		field string
	}{
		{"", Compaction{Over: 1}, "kind"},
		{"send-email", Compaction{Over: -1}, "over"},
		{"send-email", Compaction{Over: 1, Merge: "squash"}, "merge"},
	} {
		var ve *ValidationError
		require.ErrorAs(t, b.client.SetKindCompaction(ctx, tc.kind, tc.c), &ve)
		require.Equal(t, tc.field, ve.Field)
	}

	var big, small []string
	for _, to := range []string{"a", "b", "c"} {
		res, err := b.client.Enqueue(ctx, sendEmail{To: to}, &InsertOpts{GroupKey: "big"})
		require.NoError(t, err)
		big = append(big, res.Job.ID)
	}
	for _, to := range []string{"x", "y"} {
		res, err := b.client.Enqueue(ctx, sendEmail{To: to}, &InsertOpts{GroupKey: "small"})
		require.NoError(t, err)
		small = append(small, res.Job.ID)
	}
	require.NoError(t, b.client.SetKindCompaction(ctx, "send-email", Compaction{Over: 2, Merge: MergeReplace}))
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, Compaction{Over: 2, Merge: MergeReplace}, ks[0].Compaction)

	var into string
	require.Eventually(t, func() bool {
		b.clock.Advance(time.Second)
		into, err = b.client.CompactedInto(ctx, big[0])
		require.NoError(t, err)
		return into != ""
	}, 10*time.Second, time.Millisecond, "the leader compacts the group of three")
	job, err := b.client.Get(ctx, into)
	require.NoError(t, err)
	require.JSONEq(t, `{"to":"c"}`, string(job.Args))
	from, err := b.client.CompactedFrom(ctx, into)
	require.NoError(t, err)
	require.Equal(t, big, from)
	events, err := b.client.Events(ctx, big[1])
	require.NoError(t, err)
	require.Equal(t, ActorLeader, events[len(events)-1].Actor)
	for _, id := range small {
		got, err := b.client.CompactedInto(ctx, id)
		require.NoError(t, err)
		require.Empty(t, got, "a group of two is not over 2")
	}

	require.NoError(t, b.client.SetKindCompaction(ctx, "send-email", Compaction{}))
	ks, err = b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Zero(t, ks[0].Compaction)
}
