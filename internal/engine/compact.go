package engine

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// compact runs the compaction the kinds ask for (store.KindSettings.CompactOver), every
// RescueInterval while this process leads: each such kind's groups in which more than
// CompactOver jobs wait are replaced by one job each, by the kind's merge policy. A group the
// policy refuses is logged once for the job in its way, and left as it is.
func (m *maintainer) compact(ctx context.Context) error {
	e := m.e
	kinds, err := e.store.KindList(ctx)
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if k.CompactOver <= 0 {
			continue
		}
		merge := k.CompactMerge
		if merge == "" {
			merge = hoppertype.MergeKeep
		}
		res, err := e.store.JobCompact(ctx, &store.CompactParams{
			Kind: k.Name, Over: k.CompactOver, Policy: merge,
			NewID: func() string { return uuid.Must(uuid.NewV7()).String() }, Actor: hoppertype.ActorLeader,
			Retention: e.Retention(nil, nil, hoppertype.StateCanceled), MaxArgsBytes: e.cfg.MaxArgsBytes,
		})
		if err != nil {
			return err
		}
		if groups, jobs := res.Compacted(); groups > 0 {
			e.log.Info("hopper: compacted queued jobs", "kind", k.Name, "groups", groups, "jobs", jobs)
			e.Notify("") // the new jobs may be in any queue of the kind
		}
		for _, g := range res.Groups {
			m.refusedCompaction(k.Name, g)
		}
	}
	return nil
}

// refusedCompaction logs a group the compaction left as it was, once per job in its way.
func (m *maintainer) refusedCompaction(kind string, g *store.CompactedGroup) {
	if g.Refused == nil {
		return
	}
	var me *store.MergeError
	job := ""
	if errors.As(g.Refused, &me) {
		job = me.JobID
	}
	key := kind + "\x00" + g.GroupKey
	if m.refused == nil {
		m.refused = map[string]string{}
	}
	if m.refused[key] == job && job != "" {
		return
	}
	m.refused[key] = job
	m.e.log.Warn("hopper: a group's queued jobs do not fit its kind's compaction", "kind", kind, "group_key", g.GroupKey,
		"job", job, "error", g.Refused)
}
