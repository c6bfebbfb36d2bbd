package hopperui

import (
	"fmt"
	"unicode/utf8"

	"github.com/hopperjobs/hopper"
)

// The workflow graph, drawn on the server as SVG like the charts (no script, no style
// attribute): each step a box in the column of its depth (the longest chain of parents before
// it), each edge a curve from a parent's right side to a child's left, each box coloured by
// its step's state (app.css, the same classes as the state badges) and linked to its job.
// Beyond maxGraphSteps steps a drawing would be unreadable, and reading every step on each
// refresh heavy; the page shows, instead, the steps counted by state (the workflow's own
// counts), each count a link to a page of those steps.

// maxGraphSteps bounds the steps a workflow's graph draws.
const maxGraphSteps = 300

// Graph geometry, in SVG units.
const (
	nodeW, nodeH           = 150, 30
	colGap, rowGap         = 50, 12
	graphPad               = 8
	nodeLabelRunes         = 19 // a step name longer than this is clipped (its title shows it whole)
	nodeLabelX             = 8  // the name's left margin in its box
	nodeLabelBase          = 19 // the name's baseline in its box
	edgeBend       float64 = colGap / 2
)

// graph is a workflow's steps laid out by depth.
type graph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
}

type graphNode struct {
	X, Y       int
	ID, Step   string
	Label      string
	State      hopper.JobState
	Depth, Row int
}

type graphEdge struct {
	Path  string // an SVG path: a curve from the parent's right side to the child's left
	Class string // "edge", or "edge done" once the parent has ended
}

// depths returns each step's depth: 0 without parents, else one more than its deepest parent.
// Steps come parents first (WorkflowGet's order), so one pass does; a parent missing (its job
// swept) counts as depth 0.
func depths(steps []*hopper.StepRow) (map[string]int, int) {
	depth := make(map[string]int, len(steps))
	deepest := 0
	for _, s := range steps {
		d := 0
		for _, a := range s.After {
			if pd, ok := depth[a]; ok {
				d = max(d, pd+1)
			}
		}
		depth[s.Job.Step], deepest = d, max(deepest, d)
	}
	return depth, deepest
}

// layout places the steps: a column per depth, each column's steps top to bottom in insert
// order.
func layout(steps []*hopper.StepRow) *graph {
	depth, deepest := depths(steps)
	rows := make([]int, deepest+1)
	g := &graph{}
	at := make(map[string]int, len(steps)) // step → index in g.Nodes
	for _, s := range steps {
		d := depth[s.Job.Step]
		n := graphNode{X: graphPad + d*(nodeW+colGap), Y: graphPad + rows[d]*(nodeH+rowGap),
			ID: s.Job.ID, Step: s.Job.Step, Label: clip(s.Job.Step, nodeLabelRunes), State: s.Job.State,
			Depth: d, Row: rows[d]}
		rows[d]++
		at[s.Job.Step] = len(g.Nodes)
		g.Nodes = append(g.Nodes, n)
	}
	tallest := 0
	for _, r := range rows {
		tallest = max(tallest, r)
	}
	g.Width = 2*graphPad + (deepest+1)*nodeW + deepest*colGap
	g.Height = 2*graphPad + tallest*nodeH + max(tallest-1, 0)*rowGap
	for _, s := range steps {
		child := g.Nodes[at[s.Job.Step]]
		for _, a := range s.After {
			i, ok := at[a]
			if !ok {
				continue
			}
			parent := g.Nodes[i]
			x1, y1 := float64(parent.X+nodeW), float64(parent.Y+nodeH/2)
			x2, y2 := float64(child.X), float64(child.Y+nodeH/2)
			class := "edge"
			if parent.State.Terminal() {
				class = "edge done"
			}
			g.Edges = append(g.Edges, graphEdge{Class: class, Path: fmt.Sprintf("M%s %s C%s %s, %s %s, %s %s",
				num(x1), num(y1), num(x1+edgeBend), num(y1), num(x2-edgeBend), num(y2), num(x2), num(y2))})
		}
	}
	return g
}

// ViewBox is the graph's SVG viewBox.
func (g *graph) ViewBox() string { return fmt.Sprintf("0 0 %d %d", g.Width, g.Height) }

// Box sizes and the label's place, for the template.
func (g *graph) NodeW() int     { return nodeW }
func (g *graph) NodeH() int     { return nodeH }
func (n graphNode) LabelX() int { return n.X + nodeLabelX }
func (n graphNode) LabelY() int { return n.Y + nodeLabelBase }

// clip shortens s to n characters, an ellipsis last.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
