package hopper

import (
	"context"
	"fmt"
	"sort"
)

// KindInfo is a kind's settings and how many of its jobs are in each state.
type KindInfo struct {
	Name string
	// Disabled: no process starts jobs of the kind (DisableKind); they wait in state queued.
	Disabled   bool
	MaxRunning int  // fleet-wide cap (SetLimit), 0 for none
	Rate       Rate // fleet-wide rate limit (SetRateLimit), zero for none
	// CapPerKey and RatePerKey are the limits per fairness key (SetLimit and SetRateLimit with
	// PerKey), 0 and zero for none.
	CapPerKey  int
	RatePerKey Rate
	// Compaction is the leader's compaction of the kind's groups (SetKindCompaction), zero
	// for none.
	Compaction Compaction
	Counts     map[JobState]int64
}

// Compaction asks the leader to compact a kind's groups (CompactKind), every RescueInterval:
// each group in which more than Over jobs wait is replaced by one job, its args made by
// Merge (empty: MergeKeep). Over 0 asks for none.
type Compaction struct {
	Over  int
	Merge MergePolicy
}

// Kinds returns every kind that has jobs or settings (a cap, a rate limit, disabled), by name. Counting
// scans the jobs table, so on a store holding millions of jobs it takes a moment. It is safe
// for concurrent use.
func (c *Client) Kinds(ctx context.Context) ([]*KindInfo, error) {
	byName := map[string]*KindInfo{}
	get := func(name string) *KindInfo {
		k := byName[name]
		if k == nil {
			k = &KindInfo{Name: name, Counts: map[JobState]int64{}}
			byName[name] = k
		}
		return k
	}
	counts, err := c.store.JobCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list kinds: %w", err)
	}
	for _, n := range counts {
		get(n.Kind).Counts[n.State] += n.Count
	}
	settings, err := c.store.KindList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list kinds: %w", err)
	}
	for _, s := range settings {
		k := get(s.Name)
		k.Disabled, k.MaxRunning, k.Rate = s.Disabled, s.MaxRunning, s.Rate
		k.CapPerKey, k.RatePerKey = s.CapPerKey, s.RatePerKey
		k.Compaction = Compaction{Over: s.CompactOver, Merge: s.CompactMerge}
	}
	out := make([]*KindInfo, 0, len(byName))
	for _, k := range byName {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DisableKind stops every process sharing the store, and every remote worker of a server
// using it, from starting jobs of kind, until EnableKind. The claim reads the setting in the
// store, so it holds across a cluster from the moment DisableKind returns (jobs of the kind
// a process had claimed ahead, waiting for a slot, may still start within a second of their
// claim: docs/workers.md, "Claiming ahead"). Jobs of the kind that run finish normally; queued ones, and ones enqueued meanwhile (enqueues succeed), wait
// in state queued, counted as disabled in QueueInfo. A disabled kind's cap is kept. Disabling
// a disabled kind changes nothing. It returns a *ValidationError for an invalid kind name.
func (c *Client) DisableKind(ctx context.Context, kind string) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	return c.store.KindSetDisabled(ctx, kind, true)
}

// EnableKind lets jobs of a disabled kind start again, and wakes the workers of every queue,
// in this process and (on PostgreSQL) on every node. Enabling a kind that is not disabled, or
// that the store never saw, changes nothing. It returns a *ValidationError for an invalid
// kind name.
func (c *Client) EnableKind(ctx context.Context, kind string) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if err := c.store.KindSetDisabled(ctx, kind, false); err != nil {
		return err
	}
	c.engine.Notify("")
	return nil
}

// SetKindCompaction sets (c.Over > 0) or removes (0) the compaction the leader runs for kind:
// from then on, every RescueInterval while a process leads, each group of kind in which more
// than c.Over jobs wait is compacted as CompactKind would with Over c.Over and Merge c.Merge,
// recorded as done by the leader. It returns a *ValidationError naming kind, over or merge
// for bad input.
func (c *Client) SetKindCompaction(ctx context.Context, kind string, s Compaction) error {
	if err := checkCompact(kind, &CompactOpts{Over: s.Over, Merge: s.Merge}); err != nil {
		return err
	}
	if s.Over == 0 {
		s.Merge = ""
	}
	return c.store.KindSetCompaction(ctx, kind, s.Over, s.Merge)
}
