package apispec

import (
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// DeadLetterFilter is a selection of dead letters as the API carries it.
func DeadLetterFilter(f hopper.DeadLetterFilter) *hopperv1.DeadLetterFilter {
	return &hopperv1.DeadLetterFilter{Queues: f.Queues, Kinds: f.Kinds, FailedAfter: apiview.Time(f.Since), FailedBefore: apiview.Time(f.Until)}
}

// FromDeadLetterFilter reads a selection of dead letters; nil selects all.
func FromDeadLetterFilter(f *hopperv1.DeadLetterFilter) hopper.DeadLetterFilter {
	return hopper.DeadLetterFilter{Queues: f.GetQueues(), Kinds: f.GetKinds(),
		Since: apiview.FromTime(f.GetFailedAfter()), Until: apiview.FromTime(f.GetFailedBefore())}
}

// DeadLetterListRequest is a page of dead letters to list as the API asks for it (p nil: the
// first page of all).
func DeadLetterListRequest(p *hopper.DeadLetterParams) *hopperv1.DeadLetterServiceListRequest {
	if p == nil {
		p = &hopper.DeadLetterParams{}
	}
	return &hopperv1.DeadLetterServiceListRequest{Filter: DeadLetterFilter(p.DeadLetterFilter), Cursor: p.Cursor,
		Limit: apiview.Int32(p.Limit), IncludeReplayed: p.IncludeReplayed, ErrorCodes: p.ErrorCodes}
}

// FromDeadLetterListRequest reads a page of dead letters to list.
func FromDeadLetterListRequest(req *hopperv1.DeadLetterServiceListRequest) *hopper.DeadLetterParams {
	return &hopper.DeadLetterParams{DeadLetterFilter: FromDeadLetterFilter(req.GetFilter()), Cursor: req.GetCursor(),
		Limit: int(req.GetLimit()), IncludeReplayed: req.GetIncludeReplayed(), ErrorCodes: req.GetErrorCodes()}
}

// DeadLetterReplays marks the replayed dead letters of a page as the API does: by job id, a
// summary of each one's replays; the others have no entry. Never nil.
func DeadLetterReplays(ds []*hopper.DeadLetter) map[string]*hopperv1.ReplaySummary {
	out := map[string]*hopperv1.ReplaySummary{}
	for _, d := range ds {
		if d.Replays > 0 {
			out[apiview.Text(d.ID)] = &hopperv1.ReplaySummary{Count: apiview.Int32(d.Replays),
				LastJobId: apiview.Text(d.LastReplayID), LastReplayedAt: apiview.Time(d.LastReplayedAt)}
		}
	}
	return out
}

// FromDeadLetterList reads a page of dead letters: each job with its replays.
func FromDeadLetterList(res *hopperv1.DeadLetterServiceListResponse) *hopper.DeadLetterPage {
	page := &hopper.DeadLetterPage{NextCursor: res.GetNextCursor(), DeadLetters: make([]*hopper.DeadLetter, len(res.GetJobs()))}
	replays := res.GetReplays()
	for i, j := range res.GetJobs() {
		d := &hopper.DeadLetter{JobRow: apiview.FromJob(j)}
		if r := replays[j.GetId()]; r != nil {
			d.Replays, d.LastReplayID, d.LastReplayedAt = int(r.GetCount()), r.GetLastJobId(), apiview.FromTime(r.GetLastReplayedAt())
		}
		page.DeadLetters[i] = d
	}
	return page
}

// DeadLetterStats is the dead-letter queue's summary as the API shows it at now: its
// oldest_age is set whenever there is a dead letter, however young.
func DeadLetterStats(st *hopper.DeadLetterStats, now time.Time) *hopperv1.DeadLetterServiceStatsResponse {
	out := &hopperv1.DeadLetterServiceStatsResponse{Count: st.Count, OldestFailedAt: apiview.Time(st.Oldest),
		Replayed: st.Replayed}
	if !st.Oldest.IsZero() {
		out.OldestAge = apiview.Duration(max(st.OldestAge(now), time.Nanosecond))
	}
	return out
}

// FromDeadLetterStats reads the dead-letter queue's summary.
func FromDeadLetterStats(res *hopperv1.DeadLetterServiceStatsResponse) *hopper.DeadLetterStats {
	return &hopper.DeadLetterStats{Count: res.GetCount(), Oldest: apiview.FromTime(res.GetOldestFailedAt()),
		Replayed: res.GetReplayed()}
}

// ReplayRecord is one entry of the replay audit log as the API shows it.
func ReplayRecord(r *hopper.Replay) *hopperv1.ReplayRecord {
	return &hopperv1.ReplayRecord{Id: r.ID, SourceJobId: apiview.Text(r.SourceJobID), NewJobId: apiview.Text(r.NewJobID),
		OriginalId: apiview.Text(r.OriginalID), ReplayedBy: apiview.Text(r.ReplayedBy), ReplayedAt: apiview.Time(r.ReplayedAt), Reason: apiview.Text(r.Reason),
		Action: r.Action, Forced: r.Forced}
}

// FromReplayRecord reads one entry of the replay audit log.
func FromReplayRecord(r *hopperv1.ReplayRecord) *hopper.Replay {
	return &hopper.Replay{ID: r.GetId(), SourceJobID: r.GetSourceJobId(), NewJobID: r.GetNewJobId(),
		OriginalID: r.GetOriginalId(), ReplayedBy: r.GetReplayedBy(), ReplayedAt: apiview.FromTime(r.GetReplayedAt()),
		Reason: r.GetReason(), Action: r.GetAction(), Forced: r.GetForced()}
}

// ListReplaysRequest is a page of the replay audit log as the API asks for it (p nil: the
// first page of all).
func ListReplaysRequest(p *hopper.ReplayListParams) *hopperv1.ListReplaysRequest {
	if p == nil {
		p = &hopper.ReplayListParams{}
	}
	return &hopperv1.ListReplaysRequest{SourceJobId: p.SourceJobID, OriginalId: p.OriginalID, ReplayedBy: p.ReplayedBy,
		Since: apiview.Time(p.Since), Until: apiview.Time(p.Until), Cursor: p.Cursor, Limit: apiview.Int32(p.Limit)}
}

// FromListReplaysRequest reads a page of the replay audit log to list.
func FromListReplaysRequest(req *hopperv1.ListReplaysRequest) *hopper.ReplayListParams {
	return &hopper.ReplayListParams{SourceJobID: req.GetSourceJobId(), OriginalID: req.GetOriginalId(),
		ReplayedBy: req.GetReplayedBy(), Since: apiview.FromTime(req.GetSince()), Until: apiview.FromTime(req.GetUntil()),
		Cursor: req.GetCursor(), Limit: int(req.GetLimit())}
}
