package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A queue that holds every slot gives them up, as its jobs finish, to a queue that wakes up
// with work, until each holds its weighted share; a queue with nothing to do is owed nothing.
func TestAFloodedQueueGivesWayToAnotherByWeight(t *testing.T) {
	for _, tc := range []struct {
		flood, trickle int // weights
		want           int // slots the trickle queue ends up holding, of 20
	}{{1, 1, 10}, {3, 1, 5}, {1, 3, 15}} {
		s := newSlots(20)
		s.add("flood", 20)
		s.add("trickle", 20)
		s.setWeights(map[string]int{"flood": tc.flood, "trickle": tc.trickle})
		require.Equal(t, 20, s.tryAcquire("flood", 200), "alone, a queue takes the whole pool")
		require.Zero(t, s.tryAcquire("trickle", 200), "the pool is full: trickle waits, wanting")

		// Jobs finish one at a time, each queue's producer tries for the freed slot (the
		// flood's first, the worse order for the trickle), and the queue that gets it runs a job
		// that also finishes in turn, oldest first.
		var running []string
		for range 20 {
			running = append(running, "flood")
		}
		for range 400 {
			done := running[0]
			running = running[1:]
			s.release(done, 1)
			for _, q := range []string{"flood", "trickle"} {
				if s.tryAcquire(q, 200) == 1 {
					running = append(running, q)
				}
			}
			require.Len(t, running, 20, "a freed slot never stays free while a queue wants it")
		}
		require.Equal(t, tc.want, s.queues["trickle"].Held, "weights %d:%d", tc.flood, tc.trickle)

		// The trickle queue runs dry: it stops wanting, and the flood takes its slots back.
		s.want("trickle", false)
		for s.queues["trickle"].Held > 0 {
			s.release("trickle", 1)
			require.Equal(t, 1, s.tryAcquire("flood", 200))
		}
		require.Equal(t, 20, s.queues["flood"].Held)
	}
}

// Weights stay within each queue's own concurrency: a queue owed more than it may run leaves
// the rest to the others.
func TestAShareIsBoundedByTheQueuesConcurrency(t *testing.T) {
	s := newSlots(20)
	s.add("big", 20)
	s.add("small", 4)
	s.setWeights(map[string]int{"small": 10})
	require.Equal(t, 20, s.tryAcquire("big", 200))
	require.Zero(t, s.tryAcquire("small", 4), "small wants (its producer asks for no more than its concurrency)")
	s.release("big", 20)
	require.Equal(t, 16, s.tryAcquire("big", 200), "small is owed its concurrency, 4, not its weighted share, 18")
	require.Equal(t, 4, s.tryAcquire("small", 4))
}

// A process with fewer slots than its backlogged queues' shares need (one slot, weights 3:1)
// still gives each queue its turn by weight over time: the light queue is not starved.
func TestOneSlotIsSharedByWeightOverTime(t *testing.T) {
	s := newSlots(1)
	s.add("heavy", 1)
	s.add("light", 1)
	s.setWeights(map[string]int{"heavy": 3, "light": 1})
	ran := map[string]int{}
	for range 400 {
		for _, q := range []string{"heavy", "light"} { // the heavy queue's producer first
			if s.tryAcquire(q, 1) == 1 {
				ran[q]++
				s.release(q, 1)
				break
			}
		}
		s.want("heavy", true)
		s.want("light", true)
	}
	require.InDelta(t, 300, ran["heavy"], 30, "%v", ran)
	require.InDelta(t, 100, ran["light"], 10, "%v", ran)
}
