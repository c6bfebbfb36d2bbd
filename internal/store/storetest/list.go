package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testList(t *testing.T, opener Opener) {
	parallel(t, opener, "Filters", listFilters)
	parallel(t, opener, "Counts", listCounts)
	parallel(t, opener, "Pages", listPages)
	parallel(t, opener, "PagesFiltered", listPagesFiltered)
	parallel(t, opener, "StableUnderInserts", listStableUnderInserts)
	parallel(t, opener, "InvalidCursor", listInvalidCursor)
	parallel(t, opener, "ArgsContains", listArgsContains)
	parallel(t, opener, "FairnessKeys", listFairnessKeys)
}

// ArgsContains matches a substring of the stored JSON, with other filters and paging.
func listArgsContains(t *testing.T, b *bundle) {
	inv := b.insert(t, inQueue("a"), withArgs(`{"invoice":"INV-7731","amount":12}`))
	b.insert(t, inQueue("a"), withArgs(`{"invoice":"INV-1000"}`))
	other := b.insert(t, inQueue("b"), withArgs(`{"note":"INV-7731 again"}`))
	require.Equal(t, []string{other.ID, inv.ID}, ids(b.listAll(t, store.ListParams{ArgsContains: "INV-7731"})))
	require.Equal(t, []string{inv.ID}, ids(b.listAll(t, store.ListParams{ArgsContains: "INV-7731", Queues: []string{"a"}})))
	require.Equal(t, []string{inv.ID}, ids(b.listAll(t, store.ListParams{ArgsContains: `"amount":12`})))
	require.Empty(t, b.listAll(t, store.ListParams{ArgsContains: "inv-7731"}), "case sensitive")
	page, err := b.store.JobList(t.Context(), &store.ListParams{ArgsContains: "INV-", Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 2)
	require.NotEmpty(t, page.NextCursor)
}

// FairnessKeys keeps the jobs of those keys, in any state, with other filters.
func listFairnessKeys(t *testing.T, b *bundle) {
	a := b.insert(t, withFairness("tenant-a"))
	bJob := b.insert(t, inQueue("b"), withFairness("tenant-b"))
	b.insert(t, withFairness("tenant-c"))
	b.insert(t)
	done := b.jobIn(t, hoppertype.StateCompleted, withFairness("tenant-a"))
	require.Equal(t, []string{done.ID, a.ID}, ids(b.listAll(t, store.ListParams{FairnessKeys: []string{"tenant-a"}})))
	require.Equal(t, []string{done.ID, bJob.ID, a.ID},
		ids(b.listAll(t, store.ListParams{FairnessKeys: []string{"tenant-a", "tenant-b"}})))
	require.Equal(t, []string{bJob.ID},
		ids(b.listAll(t, store.ListParams{FairnessKeys: []string{"tenant-a", "tenant-b"}, Queues: []string{"b"}})))
}

// listFilters creates one job a minute: (queue, kind, state) =
// (a,x,queued) (b,x,scheduled) (b,y,running) (c,x,completed) (a,y,queued).
func listFilters(t *testing.T, b *bundle) {
	var at []time.Time
	var j []string
	add := func(job *hoppertype.JobRow, created time.Time) {
		j, at = append(j, job.ID), append(at, created)
		b.clock.Advance(time.Minute)
	}
	add(b.insert(t, inQueue("a"), withKind("x")), b.clock.Now())
	add(b.jobIn(t, hoppertype.StateScheduled, inQueue("b"), withKind("x")), b.clock.Now())
	add(b.insert(t, inQueue("b"), withKind("y")), b.clock.Now())
	b.claimOne(t, "b")
	add(b.jobIn(t, hoppertype.StateCompleted, withKind("x")), b.clock.Now())
	completedQueue := b.get(t, j[3]).Queue
	add(b.insert(t, inQueue("a"), withKind("y")), b.clock.Now())

	cases := []struct {
		name string
		p    store.ListParams
		want []string // oldest first
	}{
		{"all", store.ListParams{}, j},
		{"queued", store.ListParams{States: []hoppertype.JobState{hoppertype.StateQueued}}, []string{j[0], j[4]}},
		{"running or completed", store.ListParams{States: []hoppertype.JobState{hoppertype.StateRunning, hoppertype.StateCompleted}}, []string{j[2], j[3]}},
		{"queue a", store.ListParams{Queues: []string{"a"}}, []string{j[0], j[4]}},
		{"queues b and c", store.ListParams{Queues: []string{"b", completedQueue}}, []string{j[1], j[2], j[3]}},
		{"kind y", store.ListParams{Kinds: []string{"y"}}, []string{j[2], j[4]}},
		{"created after", store.ListParams{CreatedAfter: at[1]}, j[1:]},
		{"created before", store.ListParams{CreatedBefore: at[3]}, j[:3]},
		{"created between", store.ListParams{CreatedAfter: at[1], CreatedBefore: at[3]}, j[1:3]},
		{"queued of kind y", store.ListParams{States: []hoppertype.JobState{hoppertype.StateQueued}, Kinds: []string{"y"}}, []string{j[4]}},
		{"no such queue", store.ListParams{Queues: []string{"nope"}}, nil},
	}
	for _, c := range cases {
		asc := c.p
		asc.Ascending = true
		require.Equal(t, c.want, idsOrNil(b.listAll(t, asc)), c.name+" ascending")
		desc := slices.Clone(c.want)
		slices.Reverse(desc)
		require.Equal(t, desc, idsOrNil(b.listAll(t, c.p)), c.name+" newest first")
	}
}

func idsOrNil(jobs []*hoppertype.JobRow) []string {
	if len(jobs) == 0 {
		return nil
	}
	return ids(jobs)
}

// pages lists every page of p and returns the ids in order and the number of pages. Only the
// last page has an empty NextCursor, and no page is empty or longer than the limit.
func (b *bundle) pages(t *testing.T, p store.ListParams) ([]string, int) {
	t.Helper()
	var out []string
	for n := 1; ; n++ {
		res, err := b.store.JobList(t.Context(), &p)
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Jobs), p.Limit)
		out = append(out, ids(res.Jobs)...)
		if res.NextCursor == "" {
			return out, n
		}
		require.Len(t, res.Jobs, p.Limit, "a page with a next cursor is full")
		p.Cursor = res.NextCursor
	}
}

func (b *bundle) requirePages(t *testing.T, p store.ListParams, oldestFirst []string) {
	t.Helper()
	for _, asc := range []bool{false, true} {
		want := slices.Clone(oldestFirst)
		if !asc {
			slices.Reverse(want)
		}
		for _, limit := range []int{1, 2, 3, 4, len(want) - 1, len(want), len(want) + 1} {
			p.Limit, p.Ascending = limit, asc
			got, n := b.pages(t, p)
			require.Equal(t, want, got, "limit %d ascending %v", limit, asc)
			require.Equal(t, (len(want)+limit-1)/limit, n, "pages at limit %d ascending %v", limit, asc)
		}
	}
}

// Pages cover every job exactly once, in a stable order, both ways.
func listPages(t *testing.T, b *bundle) {
	var all []string
	for range 9 {
		all = append(all, b.insert(t).ID)
	}
	b.requirePages(t, store.ListParams{}, all)
}

func listPagesFiltered(t *testing.T, b *bundle) {
	var xs []string
	for i := range 12 {
		kind := []string{"x", "y", "z"}[i%3]
		job := b.insert(t, withKind(kind))
		if kind == "x" {
			xs = append(xs, job.ID)
		}
	}
	b.requirePages(t, store.ListParams{Kinds: []string{"x"}}, xs)
}

// Newest first, a job inserted between pages does not appear in the later pages, and none of
// the earlier jobs is skipped or repeated.
func listStableUnderInserts(t *testing.T, b *bundle) {
	var all []string
	for range 6 {
		all = append(all, b.insert(t).ID)
	}
	slices.Reverse(all)
	first, err := b.store.JobList(t.Context(), &store.ListParams{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, all[:2], ids(first.Jobs))

	b.clock.Advance(time.Second)
	b.insert(t)
	rest := b.listAll(t, store.ListParams{Limit: 2, Cursor: first.NextCursor})
	require.Equal(t, all[2:], ids(rest))
}

func listInvalidCursor(t *testing.T, b *bundle) {
	b.insert(t)
	for _, c := range []string{"%%%", "not-a-cursor", "AAAA", newID(t)} {
		_, err := b.store.JobList(t.Context(), &store.ListParams{Cursor: c})
		require.ErrorIs(t, err, store.ErrInvalidCursor, "cursor %q", c)
	}
}

// JobCounts counts per queue, kind and state, leaving out empty states, in that order.
func listCounts(t *testing.T, b *bundle) {
	b.insert(t, inQueue("counts-a"))
	b.insert(t, inQueue("counts-a"))
	b.insert(t, inQueue("counts-a"), withKind("pdf"))
	b.insert(t, inQueue("counts-a"), withRunAt(b.clock.Now().Add(time.Hour)))
	b.insert(t, inQueue("counts-b"))
	b.claimOne(t, "counts-b")

	counts, err := b.store.JobCounts(context.Background())
	require.NoError(t, err)
	var got []string
	for _, c := range counts {
		got = append(got, fmt.Sprintf("%s/%s/%s=%d", c.Queue, c.Kind, c.State, c.Count))
	}
	require.Equal(t, []string{
		"counts-a/pdf/queued=1", "counts-a/send-invoice/queued=2", "counts-a/send-invoice/scheduled=1",
		"counts-b/send-invoice/running=1",
	}, got)
}
