package engine

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/stretchr/testify/require"
)

func TestMergePolicyPrecedence(t *testing.T) {
	t.Parallel()
	job := &hoppertype.RetryPolicy{Base: 5 * time.Second}
	kind := &hoppertype.RetryPolicy{Base: time.Minute, Multiplier: 4}
	got := MergePolicy(job, kind)
	require.Equal(t, 5*time.Second, got.Base, "job wins")
	require.Equal(t, 4.0, got.Multiplier, "kind fills what the job leaves")
	require.Equal(t, DefaultRetryPolicy.Cap, got.Cap, "default fills the rest")
	require.Equal(t, DefaultRetryPolicy.Jitter, got.Jitter)
}

func TestNegativeJitterDisablesJitter(t *testing.T) {
	t.Parallel()
	got := MergePolicy(&hoppertype.RetryPolicy{Base: time.Second, Jitter: -1})
	require.Equal(t, time.Second, backoff.Delay(got, 1, func() float64 { return 0 }))
}
