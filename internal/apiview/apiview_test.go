package apiview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

// Every field of the API's Job is filled from a row that has them all: a field added to the
// message but not to Job would be missing from every answer, the CLI's --json and the async
// endpoints alike.
func TestJobFillsEveryField(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	row := &hoppertype.JobRow{
		ID: "01a20c25-204c-75dd-9586-33351e006867", Kind: "k", Queue: "q", Priority: 5,
		Args: json.RawMessage(`{"a":1}`), Headers: map[string]string{"h": "v"}, State: hoppertype.StateRunning,
		Attempt: 1, MaxAttempts: 3, Token: 7, Rescues: 1, MaxRescues: 3,
		RunAt: at, Timeout: time.Minute, WorkerID: "w", LeaseExpiresAt: at, HeartbeatAt: at,
		ProgressPercent: 40, ProgressMessage: "m", Result: json.RawMessage(`"r"`), LastError: "e", LastErrorCode: "c",
		Checkpoint: json.RawMessage(`{"c":1}`), ResumeData: json.RawMessage(`[1]`),
		IdempotencyKey: "i", GroupKey: "g", MergeKey: "m", FairnessKey: "f", OriginalID: "o", ReplayCount: 2, ReplayedBy: "api",
		HasChildren: true, WorkflowID: "wf", Step: "fetch",
		CreatedAt: at, StartedAt: at, FinishedAt: at, UpdatedAt: at, ExpiresAt: at, DeadlineAt: at,
	}
	job := Job(row, true).ProtoReflect()
	fields := job.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		require.True(t, job.Has(fd), "Job leaves %s unset", fd.Name())
	}
}

// Text that is not UTF-8 (stored before Hopper checked its input) is shown with U+FFFD, since
// protobuf strings must be UTF-8; the row is not changed.
func TestJobShowsBadBytesAsReplacementCharacters(t *testing.T) {
	t.Parallel()
	row := &hoppertype.JobRow{ID: "x", Kind: "k\xff", Args: json.RawMessage("{\"a\":\"\xff\"}"),
		Headers: map[string]string{"h\xff": "v\xfe"}}
	job := Job(row, false)
	require.Equal(t, "k\uFFFD", job.GetKind())
	require.Equal(t, "{\"a\":\"\uFFFD\"}", job.GetArgs())
	require.Equal(t, map[string]string{"h\uFFFD": "v\uFFFD"}, job.GetHeaders())
	require.Equal(t, "k\xff", row.Kind)
}
