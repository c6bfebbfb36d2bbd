package store

import (
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

func TestMergedArgs(t *testing.T) {
	t.Parallel()
	list := &MergeTarget{ID: "j", Args: []byte(`[1,{"a":[2]}]`), Policy: hoppertype.MergeAppend}
	plain := &MergeTarget{ID: "j", Args: []byte(`{"a":1}`), Policy: hoppertype.MergeKeep}
	item := func(policy hoppertype.MergePolicy, args string, limit int) *InsertParams {
		return &InsertParams{Merge: policy, Args: []byte(args), MaxArgsBytes: limit}
	}
	for _, c := range []struct {
		name    string
		target  *MergeTarget
		item    *InsertParams
		want    string // "" for args kept as they are
		wantErr error
	}{
		{"keep", list, item(hoppertype.MergeKeep, `[3]`, 0), "", nil},
		{"no policy keeps", plain, item("", `{}`, 0), "", nil},
		{"replace", plain, item(hoppertype.MergeReplace, `{"a":2}`, 0), `{"a":2}`, nil},
		{"append", list, item(hoppertype.MergeAppend, `[3, 4]`, 0), `[1,{"a":[2]},3, 4]`, nil},
		{"append nothing", list, item(hoppertype.MergeAppend, ` [ ] `, 0), `[1,{"a":[2]}]`, nil},
		{"append to an empty list", &MergeTarget{Args: []byte(`[]`), Policy: hoppertype.MergeAppend},
			item(hoppertype.MergeAppend, `[5]`, 0), `[5]`, nil},
		{"append at the limit", list, item(hoppertype.MergeAppend, `[3]`, len(`[1,{"a":[2]},3]`)), `[1,{"a":[2]},3]`, nil},
		{"append over the limit", list, item(hoppertype.MergeAppend, `[3]`, len(`[1,{"a":[2]},3]`)-1), "", ErrArgsTooLarge},
		{"replace over the limit", plain, item(hoppertype.MergeReplace, `{"a":22}`, 7), "", ErrArgsTooLarge},
		{"append to plain args", plain, item(hoppertype.MergeAppend, `[3]`, 0), "", ErrMergeConflict},
		{"replace a list", list, item(hoppertype.MergeReplace, `[3]`, 0), "", ErrMergeConflict},
		{"append what is not a list", list, item(hoppertype.MergeAppend, `3`, 0), "", ErrMergeConflict},
		{"append to stored args that are not a list", &MergeTarget{Args: []byte(`{}`), Policy: hoppertype.MergeAppend},
			item(hoppertype.MergeAppend, `[3]`, 0), "", ErrMergeConflict},
	} {
		got, err := MergedArgs(c.target, 4, c.item)
		if c.wantErr != nil {
			require.ErrorIs(t, err, c.wantErr, c.name)
			var me *MergeError
			require.ErrorAs(t, err, &me, c.name)
			require.Equal(t, 4, me.Item, c.name)
			require.NotEmpty(t, me.Detail, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		if c.want == "" {
			require.Nil(t, got, c.name)
		} else {
			require.Equal(t, c.want, string(got), c.name)
		}
	}
	require.Equal(t, "merged (keep)", MergeReason(""))
	require.Equal(t, "merged (append)", MergeReason(hoppertype.MergeAppend))
}
