package hopperui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
)

// chart is a line chart drawn on the server as SVG: no script, no style attribute, so the
// Content-Security-Policy stays strict. Each series has one value per slot of Step from From.
type chart struct {
	Title         string
	Width, Height int
	Top           int64 // the value at the top of the plot
	From, To      string
	Series        []series
	Empty         bool
}

type series struct {
	Name, Class string
	Total       int64
	Points      string // SVG polyline points
}

// Chart geometry: the plot leaves room on the left for the scale.
const (
	chartWidth  = 600
	chartHeight = 160
	chartLeft   = 36
	chartBottom = 16
)

// throughput charts per Step from from (inclusive) to to (exclusive): completed, failed and
// enqueued jobs, summed over the stats' queues and kinds.
func throughput(title string, stats []*hopper.MinuteStats, from, to time.Time, step time.Duration) *chart {
	n := int(to.Sub(from) / step)
	done, failed, enq := make([]int64, n), make([]int64, n), make([]int64, n)
	for _, s := range stats {
		i := int(s.Minute.Sub(from) / step)
		if i < 0 || i >= n {
			continue
		}
		done[i] += s.Completed
		failed[i] += s.Failed + s.Retried
		enq[i] += s.Enqueued
	}
	c := &chart{Title: title, Width: chartWidth, Height: chartHeight,
		From: from.UTC().Format("Jan 2 15:04"), To: to.UTC().Format("Jan 2 15:04 UTC")}
	for _, vs := range [][]int64{done, failed, enq} {
		for _, v := range vs {
			c.Top = max(c.Top, v)
		}
	}
	c.Empty = c.Top == 0
	c.Top = max(c.Top, 1)
	c.Series = []series{c.line("completed", "completed", done), c.line("failed or retried", "failed", failed),
		c.line("enqueued", "enqueued", enq)}
	return c
}

func (c *chart) line(name, class string, vs []int64) series {
	s := series{Name: name, Class: class}
	var b strings.Builder
	plotW, plotH := float64(c.Width-chartLeft), float64(c.Height-chartBottom)
	for i, v := range vs {
		s.Total += v
		x := float64(chartLeft) + plotW*float64(i)/float64(max(len(vs)-1, 1))
		y := plotH - plotH*float64(v)/float64(c.Top)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
	}
	s.Points = b.String()
	return s
}

// PlotBottom and PlotLeft place the axes in the template.
func (c *chart) PlotBottom() int { return c.Height - chartBottom }
func (c *chart) PlotLeft() int   { return chartLeft }
func (c *chart) ViewBox() string { return fmt.Sprintf("0 0 %d %d", c.Width, c.Height) }
