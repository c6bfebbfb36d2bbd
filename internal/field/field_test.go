package field

import (
	"errors"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

// requireField checks that err is a *ValidationError naming name, matching ErrInvalid.
func requireField(t *testing.T, err error, name string) {
	t.Helper()
	var ve *hoppertype.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Equal(t, name, ve.Field)
	require.ErrorIs(t, err, hoppertype.ErrInvalid)
}

func TestTextIsUTF8WithoutNUL(t *testing.T) {
	t.Parallel()
	require.NoError(t, Text("f", "héllo"))
	requireField(t, Text("f", "a\x00b"), "f")
	require.ErrorContains(t, Text("f", "a\x00b"), "NUL byte at byte 1")
	require.ErrorContains(t, Text("f", "ab\xff"), "not valid UTF-8 at byte 2")
	requireField(t, Limited("reason", strings.Repeat("x", 11), 10), "reason")
	require.Equal(t, -1, BadText("ok"))
}

func TestNames(t *testing.T) {
	t.Parallel()
	require.NoError(t, Kind("send-email"))
	for _, bad := range []string{"", "two words", "tab\there", strings.Repeat("k", MaxKindLen+1), "bad\xff"} {
		requireField(t, Kind(bad), "kind")
	}
	require.NoError(t, Queue("queue", "mail:eu-1.high_2"))
	for _, bad := range []string{"", "with space", "ü", strings.Repeat("q", MaxQueueLen+1)} {
		requireField(t, Queue("queue", bad), "queue")
	}
	require.NoError(t, Queues("a", []string{"b", "a"}, 2), "a queue named twice counts once")
	requireField(t, Queues("a", []string{"ok", "bad name"}, 64), "queues[1]")
	requireField(t, Queues("a", []string{"b", "c"}, 2), "queues")
	require.Equal(t, []string{"a", "b"}, QueueNames("a", []string{"b", "a"}, "default"))
	require.Equal(t, []string{"default"}, QueueNames("", nil, "default"))
}
