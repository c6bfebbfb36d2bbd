package store

import (
	"slices"

	"github.com/hopperjobs/hopper/hoppertype"
)

// HeldQueues returns, by name, the queues some of nodes work (Node.Queues) that every one
// of nodes working them holds back (Node.HeldQueues). Both stores answer NodeHeldQueues with
// it over their live nodes.
func HeldQueues(nodes []*hoppertype.Node) []string {
	held := map[string]bool{}
	for _, n := range nodes {
		for _, q := range n.Queues {
			h, seen := held[q]
			held[q] = (h || !seen) && slices.Contains(n.HeldQueues, q)
		}
	}
	var out []string
	for q, h := range held {
		if h {
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return out
}
