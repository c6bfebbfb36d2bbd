package engine

import (
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// DefaultRetryPolicy is the backoff when neither the job, its worker nor the client sets one:
// 1 s, 2 s, 4 s … capped at 1 h, ±10 % jitter.
var DefaultRetryPolicy = hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: time.Hour, Jitter: 0.1}

// MergePolicy fills p's zero fields from the fallbacks, in order. RetryBusinessErrors is true
// when any of them says so.
func MergePolicy(p *hoppertype.RetryPolicy, fallbacks ...*hoppertype.RetryPolicy) hoppertype.RetryPolicy {
	var out hoppertype.RetryPolicy
	for _, f := range append([]*hoppertype.RetryPolicy{p}, append(fallbacks, &DefaultRetryPolicy)...) {
		if f == nil {
			continue
		}
		if out.Base == 0 {
			out.Base = f.Base
		}
		if out.Multiplier == 0 {
			out.Multiplier = f.Multiplier
		}
		if out.Cap == 0 {
			out.Cap = f.Cap
		}
		if out.Jitter == 0 {
			out.Jitter = f.Jitter
		}
		out.RetryBusinessErrors = out.RetryBusinessErrors || f.RetryBusinessErrors
	}
	return out
}
