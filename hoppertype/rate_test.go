package hoppertype

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRateString(t *testing.T) {
	for want, r := range map[string]Rate{
		"0":         {},
		"100/1s":    {Limit: 100, Period: time.Second},
		"5000/1h":   {Limit: 5000, Period: time.Hour},
		"10/1m":     {Limit: 10, Period: time.Minute},
		"3/1h30m":   {Limit: 3, Period: 90 * time.Minute},
		"1/1m30s":   {Limit: 1, Period: 90 * time.Second},
		"7/250ms":   {Limit: 7, Period: 250 * time.Millisecond},
		"1/720h":    {Limit: 1, Period: 720 * time.Hour},
		"2/1h0m10s": {Limit: 2, Period: time.Hour + 10*time.Second},
	} {
		require.Equal(t, want, r.String())
	}
}
