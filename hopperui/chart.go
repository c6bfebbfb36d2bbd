package hopperui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
)

// chart is a line chart drawn on the server as SVG: no script, no style attribute, so the
// Content-Security-Policy stays strict. Each series has one value per slot of the chart's
// step from its start; app.css gives each series its own colour and dash (completed, failed,
// retried and enqueued can be told apart in grey too), and the axes carry ticks: counts on
// the left, from 0 to a round top, and wall-clock times (UTC) below.
type chart struct {
	Title         string
	Width, Height int
	From, To      string
	Series        []series
	YTicks        []tick
	XTicks        []tick
	Empty         bool
}

type series struct {
	Name, Class string
	Total       int64
	Points      string // SVG polyline points
}

// tick is a mark on an axis: where it is (x or y, in the chart's units), its label, and
// where the label's baseline is on the other axis's direction (y ticks: a little lower, to
// centre the text on the mark).
type tick struct {
	Pos, LabelPos string
	Label         string
}

// Chart geometry: the plot leaves room on the left for the counts and below for the times.
const (
	chartWidth  = 600
	chartHeight = 180
	chartLeft   = 44
	chartRight  = 8
	chartTop    = 8
	chartBottom = 20
	yTicks      = 4 // about how many steps the count axis has
	xTicks      = 6 // about how many times the time axis shows
)

// throughput charts per step from from (inclusive) to to (exclusive): completed, failed,
// retried and enqueued jobs, summed over the stats' queues and kinds.
func throughput(title string, stats []*hopper.MinuteStats, from, to time.Time, step time.Duration) *chart {
	n := int(to.Sub(from) / step)
	done, failed, retried, enq := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for _, s := range stats {
		i := int(s.Minute.Sub(from) / step)
		if i < 0 || i >= n {
			continue
		}
		done[i] += s.Completed
		failed[i] += s.Failed
		retried[i] += s.Retried
		enq[i] += s.Enqueued
	}
	c := &chart{Title: title, Width: chartWidth, Height: chartHeight,
		From: from.UTC().Format("Jan 2 15:04"), To: to.UTC().Format("Jan 2 15:04 UTC")}
	var top int64
	for _, vs := range [][]int64{done, failed, retried, enq} {
		for _, v := range vs {
			top = max(top, v)
		}
	}
	c.Empty = top == 0
	unit := niceStep(max(top, 1), yTicks)
	top = (max(top, 1) + unit - 1) / unit * unit // a whole number of steps
	for v := int64(0); v <= top; v += unit {
		y := c.y(v, top)
		c.YTicks = append(c.YTicks, tick{Pos: num(y), LabelPos: num(y + 3.5), Label: strconv.FormatInt(v, 10)})
	}
	c.XTicks = timeTicks(from, step, n)
	c.Series = []series{c.line("completed", "completed", done, top), c.line("failed", "failed", failed, top),
		c.line("retried", "retried", retried, top), c.line("enqueued", "enqueued", enq, top)}
	return c
}

// niceStep is the step of a count axis from 0 to top in about steps steps: 1, 2 or 5 times a
// power of ten.
func niceStep(top int64, steps int) int64 {
	raw := float64(top) / float64(steps)
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if float64(m*p) >= raw {
				return m * p
			}
		}
	}
}

// tickSpans are the intervals the time axis may be marked at.
var tickSpans = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour,
	12 * time.Hour, 24 * time.Hour}

// timeTicks marks the n slots of step from from at round wall-clock times (UTC), about xTicks
// of them.
func timeTicks(from time.Time, step time.Duration, n int) []tick {
	span := time.Duration(n-1) * step
	every := tickSpans[len(tickSpans)-1]
	for _, d := range tickSpans {
		if d >= span/xTicks && d >= step {
			every = d
			break
		}
	}
	var out []tick
	last := from.Add(span)
	for t := from.UTC().Truncate(every); !t.After(last); t = t.Add(every) {
		if t.Before(from) {
			continue
		}
		idx := float64(t.Sub(from)) / float64(step)
		out = append(out, tick{Pos: num(xOf(idx, n)), Label: t.Format("15:04")})
	}
	return out
}

// xOf is the x of slot idx (fractional) of n.
func xOf(idx float64, n int) float64 {
	plotW := float64(chartWidth - chartLeft - chartRight)
	return float64(chartLeft) + plotW*idx/float64(max(n-1, 1))
}

// y is the y of value v on an axis from 0 to top.
func (c *chart) y(v, top int64) float64 {
	plotH := float64(c.Height - chartBottom - chartTop)
	return float64(chartTop) + plotH - plotH*float64(v)/float64(top)
}

func (c *chart) line(name, class string, vs []int64, top int64) series {
	s := series{Name: name, Class: class}
	var b strings.Builder
	for i, v := range vs {
		s.Total += v
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(xOf(float64(i), len(vs))))
		b.WriteByte(',')
		b.WriteString(num(c.y(v, top)))
	}
	s.Points = b.String()
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// Places of the axes, for the template.
func (c *chart) PlotLeft() int   { return chartLeft }
func (c *chart) PlotRight() int  { return c.Width - chartRight }
func (c *chart) PlotTop() int    { return chartTop }
func (c *chart) PlotBottom() int { return c.Height - chartBottom }
func (c *chart) YLabelX() int    { return chartLeft - 4 }
func (c *chart) XLabelY() int    { return c.Height - chartBottom + 13 }
func (c *chart) TickEnd() int    { return c.Height - chartBottom + 4 }
func (c *chart) ViewBox() string { return fmt.Sprintf("0 0 %d %d", c.Width, c.Height) }
func (t tick) LabelY() string    { f, _ := strconv.ParseFloat(t.Pos, 64); return num(f + 3.5) }
