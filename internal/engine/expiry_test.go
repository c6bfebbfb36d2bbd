package engine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// sweepStore is a store whose sweep windows each take 10 ms of its fake clock and delete
// deleted jobs; the window numbered end reaches the end of the table (0: none does).
type sweepStore struct {
	store.Store
	clk     *clock.Fake
	deleted int
	end     int
	windows int
}

func (s *sweepStore) JobSweepExpired(context.Context, *store.SweepParams) (*store.SweepResult, error) {
	s.clk.Advance(10 * time.Millisecond)
	s.windows++
	res := &store.SweepResult{Deleted: s.deleted, Next: strconv.Itoa(s.windows)}
	if s.windows == s.end {
		res.Next = ""
	}
	return res, nil
}

func (s *sweepStore) Now() time.Time { return s.clk.Now() }

func (s *sweepStore) StatsPrune(context.Context, time.Time) (int64, error) { return 0, nil }

// The walk goes on at once while it deletes, rests nineteen times a pass's length after a pass
// that found nothing to delete (a twentieth of the time walking), and starts again from the
// front SweepInterval after it reached the end.
func TestSweepPacesAWalkThatFindsNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		deleted, end int
		want         time.Duration // after the pass's start
	}{
		{"nothing expired", 0, 0, 200*time.Millisecond + 19*200*time.Millisecond},
		{"expired jobs", 3, 0, 0},
		{"the end of the table", 0, 5, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			st := &sweepStore{clk: clk, deleted: c.deleted, end: c.end}
			e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1"})
			require.NoError(t, err)
			e.leader.set(clk.Now().Add(time.Hour), 1)
			m := newMaintainer(e)
			start := clk.Now()
			next, err := m.sweep(t.Context(), start)
			require.NoError(t, err)
			require.Equal(t, c.want, next.Sub(start))
			if c.end == 0 {
				require.Equal(t, sweepPass, st.windows, "a pass reads sweepPass windows")
				require.Equal(t, strconv.Itoa(sweepPass), m.sweepFrom, "the next pass goes on from there")
			} else {
				require.Empty(t, m.sweepFrom, "the next walk starts at the front")
			}
		})
	}
}
