package hopperui

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// The count axis steps by 1, 2 or 5 times a power of ten, to a top at or above the highest
// value; the time axis is marked at round wall-clock times inside the chart.
func TestChartTicks(t *testing.T) {
	for _, tc := range []struct{ top, want int64 }{{1, 1}, {3, 1}, {4, 1}, {5, 2}, {9, 5}, {17, 5}, {40, 10}, {41, 20}, {999, 500}, {1001, 500}} {
		require.Equal(t, tc.want, niceStep(tc.top, yTicks), "top %d", tc.top)
	}
	from := time.Date(2026, 3, 1, 14, 3, 0, 0, time.UTC)
	stats := []*hopper.MinuteStats{
		{Minute: from, Completed: 37},
		{Minute: from.Add(10 * time.Minute), Failed: 3, Retried: 5, Enqueued: 41},
	}
	c := throughput("hour", stats, from, from.Add(time.Hour), time.Minute)
	var labels []string
	for _, tk := range c.YTicks {
		labels = append(labels, tk.Label)
	}
	require.Equal(t, []string{"0", "20", "40", "60"}, labels, "41 at most: steps of 20 to 60")
	require.Equal(t, num(float64(chartHeight-chartBottom)), c.YTicks[0].Pos, "0 on the time axis")
	require.Equal(t, num(float64(chartTop)), c.YTicks[3].Pos, "the top at the plot's top")
	labels = nil
	for _, tk := range c.XTicks {
		labels = append(labels, tk.Label)
	}
	require.Equal(t, []string{"14:10", "14:20", "14:30", "14:40", "14:50", "15:00"}, labels)
	require.Equal(t, num(xOf(7, 60)), c.XTicks[0].Pos, "14:10 is the 8th minute from 14:03")
	totals := map[string]int64{}
	for _, s := range c.Series {
		totals[s.Class] = s.Total
	}
	require.Equal(t, map[string]int64{"completed": 37, "failed": 3, "retried": 5, "enqueued": 41}, totals, "failed and retried apart")

	day := throughput("day", nil, from, from.Add(24*time.Hour), 10*time.Minute)
	require.True(t, day.Empty)
	require.Len(t, day.XTicks, 6, "every 4 hours")
	require.Equal(t, "16:00", day.XTicks[0].Label)
}
