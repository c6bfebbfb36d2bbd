package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func pickedIDs(cs []FairCandidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// A job read twice (a key's head and the queue's) is chosen once; a capped kind takes no more
// than its free slots, and the next jobs fill the claim.
func TestFairPickDuplicatesAndKindCaps(t *testing.T) {
	cands := []FairCandidate{
		{ID: "a1", Key: "a", Kind: "report"}, {ID: "a2", Key: "a", Kind: "report"}, {ID: "a3", Key: "a", Kind: "mail"},
		{ID: "b1", Key: "b", Kind: "report"}, {ID: "a1", Key: "a", Kind: "report"},
	}
	require.Equal(t, []string{"a1", "b1", "a2", "a3"}, pickedIDs(FairPick(cands, nil, 10, nil)))
	require.Equal(t, []string{"a1", "a3"}, pickedIDs(FairPick(cands, nil, 10, map[string]int{"report": 1})))
	require.Equal(t, []string{"b1", "a1"}, pickedIDs(FairPick(cands, map[string]int64{"a": 5}, 2, nil)),
		"the least recently served key first")
}

// The keys a claim served become the most recently served, in the order it served them last.
func TestFairServed(t *testing.T) {
	keys, values := FairServed([]FairCandidate{{ID: "1", Key: "a"}, {ID: "2", Key: "b"}, {ID: "3", Key: "a"}}, []string{"c"}, 7)
	require.Equal(t, []string{"b", "a", "c"}, keys, "then the keys it read none of whose jobs it took")
	require.Equal(t, []int64{8, 9, 10}, values)
}
