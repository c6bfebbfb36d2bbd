package fairshare

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestSharesAddUpToThePool(t *testing.T) {
	t.Parallel()
	a, b, c := &Queue{Name: "a", Weight: 3}, &Queue{Name: "b", Weight: 1}, &Queue{Name: "c", Weight: 1}
	require.Equal(t, map[*Queue]int{a: 15, b: 5}, Shares(20, []*Queue{a, b}))
	require.Equal(t, map[*Queue]int{a: 8, b: 2}, Shares(10, []*Queue{b, a}), "7.5 and 2.5: the heavier queue takes the odd unit")
	require.Equal(t, map[*Queue]int{a: 6, b: 2, c: 2}, Shares(10, []*Queue{a, b, c}))
	require.Equal(t, map[*Queue]int{b: 1, c: 0}, Shares(1, []*Queue{c, b}), "equal remainders: by name")
}

func TestSplitByWeightAndHoldings(t *testing.T) {
	t.Parallel()
	q := func(name string, weight, held int) *Queue { return &Queue{Name: name, Weight: weight, Held: held} }
	for _, tc := range []struct {
		name string
		free int
		qs   []*Queue
		want []int
	}{
		{"nothing held: by weight", 20, []*Queue{q("a", 3, 0), q("b", 1, 0)}, []int{15, 5}},
		{"toward the shares of free plus holdings", 10, []*Queue{q("a", 3, 70), q("b", 1, 20)}, []int{5, 5}},
		{"a queue above its level gets none, the others all", 5, []*Queue{q("a", 3, 70), q("b", 1, 0)}, []int{0, 5}},
		{"a lone queue takes everything", 7, []*Queue{q("a", 1, 500)}, []int{7}},
		{"three queues, one far above", 12, []*Queue{q("a", 1, 90), q("b", 1, 2), q("c", 2, 0)}, []int{0, 3, 9}},
	} {
		got := Split(tc.free, tc.qs, 0.5)
		for i, q := range tc.qs {
			require.Equal(t, tc.want[i], got[q], "%s: queue %s", tc.name, q.Name)
		}
	}
	require.Empty(t, Split(0, []*Queue{q("a", 1, 0)}, 0))
}

// The unit a split cannot divide evenly goes to each queue as often as its fraction says,
// over every offset: a split of one job between weights 3 and 1 gives the first three times
// in four, so that splits without memory of each other still follow the weights.
func TestSplitDrawsTheOddUnitByItsFraction(t *testing.T) {
	t.Parallel()
	a, b := &Queue{Name: "a", Weight: 3}, &Queue{Name: "b", Weight: 1}
	got := map[string]int{}
	for i := range 100 {
		for q, n := range Split(1, []*Queue{a, b}, float64(i)/100) {
			got[q.Name] += n
		}
	}
	require.Equal(t, map[string]int{"a": 75, "b": 25}, got)

	x, y, z := &Queue{Name: "x", Weight: 1}, &Queue{Name: "y", Weight: 1}, &Queue{Name: "z", Weight: 1}
	got = map[string]int{}
	for i := range 300 {
		for q, n := range Split(2, []*Queue{z, y, x}, float64(i)/300) {
			got[q.Name] += n
		}
	}
	require.Equal(t, map[string]int{"x": 200, "y": 200, "z": 200}, got)
}

// Every free unit is given, none is taken back, and no queue that gets units ends more than
// one unit above the level of any other (a weighted max-min share).
func TestSplitIsWorkConservingAndMaxMin(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		free := rapid.IntRange(0, 1000).Draw(t, "free")
		n := rapid.IntRange(1, 64).Draw(t, "queues")
		qs := make([]*Queue, n)
		for i := range qs {
			qs[i] = &Queue{Name: fmt.Sprintf("q%02d", i), Weight: rapid.IntRange(1, 1000).Draw(t, "weight"),
				Held: rapid.IntRange(0, 1000).Draw(t, "held")}
		}
		got := Split(free, qs, rapid.Float64Range(0, 0.999999).Draw(t, "u"))
		sum := 0
		for _, q := range qs {
			require.GreaterOrEqual(t, got[q], 0, q.Name)
			sum += got[q]
		}
		require.Equal(t, free, sum, "every free unit is given")
		for _, q := range qs {
			if got[q] == 0 {
				continue
			}
			for _, p := range qs {
				// (held+got−1)/weight of q below (held+got+1)/weight of p
				require.Less(t, (q.Held+got[q]-1)*p.Weight, (p.Held+got[p]+1)*q.Weight, "%s above %s", q.Name, p.Name)
			}
		}
	})
}

// A pool too small for every queue's share (one unit, weights 3:1) follows the weights over
// time: the unit left over goes to the queue served least for its weight, not always to the
// heavier one.
func TestSharesOfASmallPoolFollowTheWeightsOverTime(t *testing.T) {
	heavy := &Queue{Name: "heavy", Weight: 3, Max: 10, Wanting: true}
	light := &Queue{Name: "light", Weight: 1, Max: 10, Wanting: true}
	for range 400 {
		for q, n := range Shares(1, []*Queue{heavy, light}) {
			q.Served += int64(n)
		}
	}
	require.Equal(t, int64(300), heavy.Served)
	require.Equal(t, int64(100), light.Served)
}
