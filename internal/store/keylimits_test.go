package store

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

// Bound leaves each key the first of its candidates, in claim order, that every limit that
// applies to them allows: the queue's per key and the kind's per key, after the running jobs
// and the stored buckets. Unkeyed candidates all pass; a candidate read twice counts once.
func TestKeyLeftBound(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	limits := []KeyLimit{
		{Scope: LimitQueue, Name: "q", Cap: 2},
		{Scope: LimitKind, Name: "pdf", Cap: 1},
		{Scope: LimitKind, Name: "sms", Rate: Rate{Limit: 2, Period: time.Second}},
	}
	running := []KeyRunning{{Key: "b", Queue: "q", Kind: "mail", Running: 2}, {Key: "c", Queue: "other", Kind: "pdf", Running: 1}}
	stored := []KeyBucket{{Scope: LimitKind, Name: "sms", Key: "d", Tokens: 0.5, At: now.Add(-100 * time.Millisecond)}}
	kl := NewKeyLeft("q", limits, running, stored, now)
	cands := []FairCandidate{
		{ID: "a1", Key: "a", Kind: "mail"}, {ID: "a2", Key: "a", Kind: "pdf"}, {ID: "a3", Key: "a", Kind: "mail"},
		{ID: "a1", Key: "a", Kind: "mail"},
		{ID: "b1", Key: "b", Kind: "mail"},                                    // b runs 2 jobs of q: at the queue's cap
		{ID: "c1", Key: "c", Kind: "pdf"}, {ID: "c2", Key: "c", Kind: "mail"}, // c runs a pdf job elsewhere
		{ID: "d1", Key: "d", Kind: "sms"}, {ID: "d2", Key: "d", Kind: "sms"}, // d's sms bucket: 0.5 + 0.2
		{ID: "e1", Key: "e", Kind: "sms"}, {ID: "e2", Key: "e", Kind: "sms"}, {ID: "e3", Key: "e", Kind: "sms"},
		{ID: "u1", Kind: "mail"}, {ID: "u2", Kind: "pdf"},
	}
	got := kl.Bound(cands)
	ids := make([]string, len(got))
	for i, c := range got {
		ids[i] = c.ID
	}
	require.Equal(t, []string{"a1", "a2", "c2", "e1", "e2", "u1", "u2"}, ids)

	h := Hold{}
	kl.Hold(&h, 10, 7)
	require.True(t, h.Capped)
	require.Equal(t, 150*time.Millisecond, h.Wait.Round(time.Millisecond), "d's next start: 0.3 of a token at 2/s")

	kl.Spend([]*hoppertype.JobRow{{FairnessKey: "e", Kind: "sms"}, {FairnessKey: "e", Kind: "sms"}, {Kind: "sms"}})
	put, drop := kl.Writes()
	require.Equal(t, []KeyBucket{{Scope: LimitKind, Name: "sms", Key: "e", Tokens: 0, At: now}}, put)
	require.Empty(t, drop, "d's bucket is not full")

	// A stored bucket read full again and not charged is dropped; one above a lowered limit is
	// clamped to it.
	kl = NewKeyLeft("q", limits, nil, []KeyBucket{{Scope: LimitKind, Name: "sms", Key: "d", Tokens: 9, At: now}}, now)
	require.Len(t, kl.Bound([]FairCandidate{{ID: "d1", Key: "d", Kind: "sms"}, {ID: "d2", Key: "d", Kind: "sms"},
		{ID: "d3", Key: "d", Kind: "sms"}}), 2)
	_, drop = kl.Writes()
	require.Len(t, drop, 1)
	h = Hold{}
	kl.Hold(&h, 3, 3)
	require.False(t, h.Capped, "a claim that got all it asked was not held")
}
