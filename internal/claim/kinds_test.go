package claim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Reserve hands out a capped kind's room once: two claims out at once never take together
// more than the cap; a saturated kind is left out; Unreserve and Free give room back.
func TestKindCapsReserveRoomOnce(t *testing.T) {
	t.Parallel()
	k := NewKindCaps(map[string]int{"heavy": 3})
	room, others := k.Reserve([]string{"heavy", "light"}, 2)
	require.Equal(t, map[string]int{"heavy": 2}, room, "at most the claim's units")
	require.Equal(t, []string{"light"}, others)
	room, _ = k.Reserve([]string{"heavy", "light"}, 10)
	require.Equal(t, map[string]int{"heavy": 1}, room, "what the first claim reserved is not offered again")
	room, others = k.Reserve([]string{"heavy", "light"}, 10)
	require.Nil(t, room, "saturated: left out")
	require.Equal(t, []string{"light"}, others)
	k.Unreserve("heavy", 1) // the second claim found none
	require.Equal(t, 2, k.Held("heavy"))
	k.Free("heavy", 2)
	k.Free("light", 1) // not capped: nothing to count
	require.Equal(t, 0, k.Held("heavy"))

	var none *KindCaps
	room, others = none.Reserve([]string{"a"}, 5)
	require.Nil(t, room)
	require.Equal(t, []string{"a"}, others)
	require.False(t, none.Capped("a"))
	none.Free("a", 1)
}

// Capped claims each capped kind with room apart, within its room and none ahead, then the
// kinds without a cap with what is left and the jobs ahead; a saturated kind is not claimed,
// and the room a claim did not take is given back.
func TestCappedSplitsAClaimByKind(t *testing.T) {
	t.Parallel()
	k := NewKindCaps(map[string]int{"heavy": 2, "gpu": 1})
	require.True(t, k.Take("gpu"), "a job from elsewhere takes the gpu's room")
	require.False(t, k.Take("gpu"), "saturated")
	require.True(t, k.Saturated("gpu"))
	require.True(t, k.Take("light"), "no cap: always room")
	var splits []Split
	jobs, err := Capped(k, []string{"gpu", "heavy", "light"}, 5, 3, func(s Split) ([]string, error) {
		splits = append(splits, s)
		if s.Capped {
			return []string{s.Kinds[0]}, nil // one of the two it may take
		}
		return []string{"light", "light"}, nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"heavy", "light", "light"}, jobs)
	require.Equal(t, []Split{{Kinds: []string{"heavy"}, Units: 2, Capped: true}, {Kinds: []string{"light"}, Units: 4, Ahead: 3}}, splits)
	require.Equal(t, 1, k.Held("heavy"), "the room it did not take is given back")
	require.Equal(t, 1, k.Held("gpu"))
}
