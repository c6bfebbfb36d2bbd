package store

import (
	"fmt"
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
	require.Equal(t, []string{"b1", "a1"}, pickedIDs(FairPick(cands, map[string]FairKey{"a": {Served: 5}}, 2, nil)),
		"the least recently served key first")
}

// The keys a claim served become the most recently served, in the order it served them last.
func TestFairServed(t *testing.T) {
	writes := FairServed([]FairCandidate{{ID: "1", Key: "a"}, {ID: "2", Key: "b"}, {ID: "3", Key: "a"}}, []string{"c"}, nil, 7)
	require.Equal(t, []FairWrite{{Key: "b", Served: 8}, {Key: "a", Served: 9}, {Key: "c", Served: 10}}, writes,
		"then the keys it read none of whose jobs it took")
}

// A key of weight W takes W turns a round: a claim of 4 from keys weighted 3 and 1 takes 3 and
// 1; claims of one take the weighted key three times, each keeping its place until its last
// turn, then the other once.
func TestFairWeights(t *testing.T) {
	var cands []FairCandidate
	for i := range 6 {
		cands = append(cands, FairCandidate{ID: fmt.Sprintf("a%d", i), Key: "a"}, FairCandidate{ID: fmt.Sprintf("b%d", i), Key: "b"})
	}
	keys := map[string]FairKey{"a": {Weight: 3}, "b": {}}
	require.Equal(t, []string{"a0", "a1", "a2", "b0", "a3", "a4", "a5", "b1"}, pickedIDs(FairPick(cands, keys, 8, nil)))

	var took []string
	var from int64
	for range 8 {
		picked := FairPick(cands, keys, 1, nil)
		took = append(took, picked[0].Key)
		for _, w := range FairServed(picked, nil, keys, from) {
			from = max(from, w.Served)
			k := keys[w.Key]
			k.Served, k.Used = w.Served, w.Used
			keys[w.Key] = k
		}
	}
	require.Equal(t, []string{"a", "a", "a", "b", "a", "a", "a", "b"}, took)

	// A key whose weight was lowered below the turns it used takes its next turn at once.
	require.Equal(t, []string{"a0", "b0"}, pickedIDs(FairPick(cands, map[string]FairKey{"a": {Used: 2}}, 2, nil)))

	// Priority still first: a higher-priority job of the light key goes before the heavy key's.
	cands = append(cands, FairCandidate{ID: "b9", Key: "b", Priority: 1})
	require.Equal(t, "b9", FairPick(cands, map[string]FairKey{"a": {Weight: 3}}, 1, nil)[0].ID)
}
