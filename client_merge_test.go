package hopper

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Merge options are checked like every other: the field is named, nothing is stored.
func TestMergeOptionsAreValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	cases := []struct {
		name  string
		opts  *InsertOpts
		field string
	}{
		{"key too long", &InsertOpts{MergeKey: strings.Repeat("k", maxKeyLen+1)}, "merge_key"},
		{"key with NUL", &InsertOpts{MergeKey: nul}, "merge_key"},
		{"key not UTF-8", &InsertOpts{MergeKey: notUTF8}, "merge_key"},
		{"unknown policy", &InsertOpts{MergeKey: "k", Merge: "squash"}, "merge"},
		{"policy without key", &InsertOpts{Merge: MergeReplace}, "merge"},
	}
	for _, tc := range cases {
		_, err := b.client.Enqueue(ctx, sendEmail{To: "a"}, tc.opts)
		require.ErrorIs(t, err, ErrInvalid, tc.name)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.field, ve.Field, tc.name)
	}
	_, err := b.client.EnqueueMany(ctx, []EnqueueParams{{Args: sendEmail{}}, {Args: sendEmail{}, Opts: &InsertOpts{Merge: MergeAppend}}})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "jobs[1].merge", ve.Field)

	res, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{MergeKey: strings.Repeat("é", maxKeyLen/2)})
	require.NoError(t, err, "a key at the limit")
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Jobs, 1)
	require.Equal(t, res.Job.ID, all.Jobs[0].ID)
}

// Without a policy a merge key keeps the waiting job; the result says merged and names it.
func TestMergeKeepIsTheDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	first, err := b.client.Enqueue(ctx, sendEmail{To: "a"}, &InsertOpts{MergeKey: "digest-1"})
	require.NoError(t, err)
	require.False(t, first.Merged)
	again, err := b.client.Enqueue(ctx, sendEmail{To: "b"}, &InsertOpts{MergeKey: "digest-1"})
	require.NoError(t, err)
	require.True(t, again.Merged)
	require.False(t, again.Existing)
	require.Equal(t, first.Job.ID, again.Job.ID)
	require.JSONEq(t, `{"to":"a"}`, string(again.Job.Args))
	events, err := b.client.Events(ctx, first.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "merged (keep)", events[len(events)-1].Reason)
}

// MergeAppend stores a list; a Merged[T] adds its items as they are.
func TestMergeAppendStoresAList(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	opts := &InsertOpts{MergeKey: "m", Merge: MergeAppend}
	first, err := b.client.Enqueue(ctx, Merged[sendEmail]{{To: "a"}, {To: "b"}}, opts)
	require.NoError(t, err)
	require.Equal(t, "send-email", first.Job.Kind)
	require.JSONEq(t, `[{"to":"a"},{"to":"b"}]`, string(first.Job.Args))
	for _, args := range []JobArgs{sendEmail{To: "c"}, Merged[sendEmail](nil), RawArgs{KindName: "send-email", JSON: []byte(`{"to": "d"}`)}} {
		res, err := b.client.Enqueue(ctx, args, opts)
		require.NoError(t, err)
		require.True(t, res.Merged)
		require.Equal(t, first.Job.ID, res.Job.ID)
	}
	job, err := b.client.Get(ctx, first.Job.ID)
	require.NoError(t, err)
	require.Equal(t, `[{"to":"a"},{"to":"b"},{"to":"c"},{"to":"d"}]`, string(job.Args))

	single, err := b.client.Enqueue(ctx, sendEmail{To: "x"}, &InsertOpts{MergeKey: "other", Merge: MergeAppend})
	require.NoError(t, err)
	require.Equal(t, `[{"to":"x"}]`, string(single.Job.Args), "a list of one")
}

// An append whose result would exceed Config.MaxArgsBytes is refused naming args (in a batch,
// the entry's args); the waiting job keeps its args. The list's brackets count.
func TestMergeAppendKeepsToMaxArgsBytes(t *testing.T) {
	t.Parallel()
	const limit = 64
	b := setup(t, nil, func(c *Config) { c.MaxArgsBytes = limit })
	ctx := t.Context()
	opts := &InsertOpts{MergeKey: "m", Merge: MergeAppend}
	item := RawArgs{KindName: "k", JSON: []byte(`"` + strings.Repeat("x", 20) + `"`)} // 22 bytes
	first, err := b.client.Enqueue(ctx, item, opts)
	require.NoError(t, err)
	_, err = b.client.Enqueue(ctx, item, opts) // 47 bytes
	require.NoError(t, err)

	_, err = b.client.Enqueue(ctx, item, opts) // 70 bytes
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "args", ve.Field)
	require.Contains(t, ve.Reason, first.Job.ID)
	require.Contains(t, ve.Reason, "limit of 64")

	_, err = b.client.EnqueueMany(ctx, []EnqueueParams{{Args: sendEmail{To: "new"}}, {Args: item, Opts: opts}})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "jobs[1].args", ve.Field)

	job, err := b.client.Get(ctx, first.Job.ID)
	require.NoError(t, err)
	require.Len(t, job.Args, 47)
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Jobs, 1, "the refused batch stored nothing")

	_, err = b.client.Enqueue(ctx, RawArgs{KindName: "k", JSON: []byte(`"` + strings.Repeat("y", limit-2) + `"`)},
		&InsertOpts{MergeKey: "new", Merge: MergeAppend})
	require.ErrorAs(t, err, &ve, "a new list of one counts its brackets")
	require.Equal(t, "args", ve.Field)
}

// Appending to a job that holds no list is refused naming merge.
func TestMergeRefusesAChangeOfShape(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	_, err := b.client.Enqueue(ctx, sendEmail{To: "a"}, &InsertOpts{MergeKey: "m", Merge: MergeReplace})
	require.NoError(t, err)
	_, err = b.client.Enqueue(ctx, sendEmail{To: "b"}, &InsertOpts{MergeKey: "m", Merge: MergeAppend})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "merge", ve.Field)
	require.Contains(t, ve.Reason, "not append")
}
