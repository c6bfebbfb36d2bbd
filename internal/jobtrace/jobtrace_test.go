package jobtrace

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// remoteSpan is ctx with the span context of parent.
func remoteSpan(t *testing.T) context.Context {
	t.Helper()
	ctx := Extract(context.Background(), map[string]string{TraceParent: parent})
	require.True(t, trace.SpanContextFromContext(ctx).IsValid())
	return ctx
}

// Inject adds the caller's trace context in a new map, leaves the caller's map alone, keeps a
// traceparent the headers already carry, and adds nothing outside a span.
func TestInject(t *testing.T) {
	t.Parallel()
	own := map[string]string{"tenant": "a"}
	got := Inject(remoteSpan(t), own)
	require.Equal(t, parent, got[TraceParent])
	require.Equal(t, "a", got["tenant"])
	require.Equal(t, map[string]string{"tenant": "a"}, own, "the caller's map is not changed")

	theirs := map[string]string{TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	require.Equal(t, theirs, Inject(remoteSpan(t), theirs))
	require.Nil(t, Inject(context.Background(), nil), "no span: nothing added")
}

// A traceparent that does not parse is no trace: TraceID says "", and Start makes a root span.
func TestMalformedTraceparentIsNoTrace(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "\xff"} {
		require.Empty(t, TraceID(map[string]string{TraceParent: bad}), "%q", bad)
	}
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", TraceID(map[string]string{TraceParent: parent}))
}

// FromHTTP takes the request's traceparent, unless a middleware's span is there already.
func TestFromHTTP(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Traceparent", parent)
	sc := trace.SpanContextFromContext(FromHTTP(context.Background(), h))
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())

	mine := trace.SpanContextFromContext(remoteSpan(t))
	other := http.Header{}
	other.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	got := trace.SpanContextFromContext(FromHTTP(remoteSpan(t), other))
	require.Equal(t, mine.TraceID(), got.TraceID(), "the middleware's span wins")
	require.Equal(t, context.Background(), FromHTTP(context.Background(), http.Header{}))
}
