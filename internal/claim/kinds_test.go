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
