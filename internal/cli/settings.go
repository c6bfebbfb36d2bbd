package cli

import (
	"math"
	"strconv"
	"strings"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	fieldcheck "github.com/hopperjobs/hopper/internal/field"
	"github.com/spf13/cobra"
)

// settings are the fleet-wide settings `queues set` and `kinds set` change: those not nil. 0
// removes a weight or a cap, the zero Rate a rate limit.
type settings struct {
	Weight, Cap *int
	Rate        *hopper.Rate
	// CapPerKey and RatePerKey are the limits per fairness key (--cap-per-key, --rate-per-key).
	CapPerKey  *int
	RatePerKey *hopper.Rate
	// Compaction is a kind's (`kinds set --compact-over`, --compact-merge).
	Compaction *hopper.Compaction
	// KeyWeights are a queue's (`queues set --key-weight KEY=W`).
	KeyWeights map[string]int
}

// queue is s for a queue.
func (s settings) queue() hopperclient.QueueSettings {
	return hopperclient.QueueSettings{Weight: s.Weight, MaxRunning: s.Cap, Rate: s.Rate, CapPerKey: s.CapPerKey,
		RatePerKey: s.RatePerKey, KeyWeights: s.KeyWeights}
}

// kind is s for a kind (which has no weight).
func (s settings) kind() hopperclient.KindSettings {
	return hopperclient.KindSettings{MaxRunning: s.Cap, Rate: s.Rate, Compaction: s.Compaction, CapPerKey: s.CapPerKey,
		RatePerKey: s.RatePerKey}
}

// addSettingsFlags adds --cap and --rate to a set command, and --weight when weight is true.
func addSettingsFlags(cmd *cobra.Command, weight bool) {
	if weight {
		cmd.Flags().Int("weight", 0, "fair-share weight, 1–1000 (0 removes it)")
		cmd.Flags().StringArray("key-weight", nil, "KEY=W: the weight of fairness key KEY in the queue, 1–1000 (0 or 1 removes it; repeatable)")
	}
	cmd.Flags().Int("cap", 0, "most running jobs across the fleet (0 removes the cap)")
	cmd.Flags().String("rate", "", "most job starts per period across the fleet, N/DURATION such as 100/1s or 5000/1h (0 removes the limit)")
	cmd.Flags().Int("cap-per-key", 0, "most running jobs of each fairness key across the fleet (0 removes the cap)")
	cmd.Flags().String("rate-per-key", "", "most job starts of each fairness key per period across the fleet, N/DURATION (0 removes the limit)")
}

// readSettings reads the settings flags that were given, refusing bad values with a usage
// error naming the flag, so that a refused command changes nothing.
func readSettings(cmd *cobra.Command) (settings, error) {
	var s settings
	fl := cmd.Flags()
	if fl.Lookup("weight") != nil && fl.Changed("weight") {
		w, _ := fl.GetInt("weight")
		if w < 0 || w > hopper.MaxQueueWeight {
			return s, usageErrorf("invalid --weight: %d is outside 1–%d (0 removes it)", w, hopper.MaxQueueWeight)
		}
		s.Weight = &w
	}
	if fl.Changed("cap") {
		c, _ := fl.GetInt("cap")
		if c < 0 || c > math.MaxInt32 {
			return s, usageErrorf("invalid --cap: %d is outside 0–%d (0 removes the cap)", c, math.MaxInt32)
		}
		s.Cap = &c
	}
	if fl.Changed("rate") {
		text, _ := fl.GetString("rate")
		r, err := hopper.ParseRate("--rate", text)
		if err != nil {
			return s, usageErrorf("%w", err)
		}
		s.Rate = &r
	}
	if fl.Changed("cap-per-key") {
		c, _ := fl.GetInt("cap-per-key")
		if c < 0 || c > math.MaxInt32 {
			return s, usageErrorf("invalid --cap-per-key: %d is outside 0–%d (0 removes the cap)", c, math.MaxInt32)
		}
		s.CapPerKey = &c
	}
	if fl.Changed("rate-per-key") {
		text, _ := fl.GetString("rate-per-key")
		r, err := hopper.ParseRate("--rate-per-key", text)
		if err != nil {
			return s, usageErrorf("%w", err)
		}
		s.RatePerKey = &r
	}
	if fl.Lookup("compact-over") != nil && (fl.Changed("compact-over") || fl.Changed("compact-merge")) {
		over, _ := fl.GetInt("compact-over")
		merge, _ := fl.GetString("compact-merge")
		switch {
		case !fl.Changed("compact-over"):
			return s, usageErrorf("invalid --compact-merge: it needs --compact-over")
		case over < 0 || over > math.MaxInt32:
			return s, usageErrorf("invalid --compact-over: %d is outside 0–%d (0 removes the setting)", over, math.MaxInt32)
		case merge != "" && !hopper.MergePolicy(merge).Valid():
			return s, usageErrorf("invalid --compact-merge: %q is not one of keep, replace, append", merge)
		}
		s.Compaction = &hopper.Compaction{Over: over, Merge: hopper.MergePolicy(merge)}
	}
	if fl.Lookup("key-weight") != nil && fl.Changed("key-weight") {
		pairs, _ := fl.GetStringArray("key-weight")
		s.KeyWeights = map[string]int{}
		for _, pair := range pairs {
			i := strings.LastIndexByte(pair, '=')
			if i < 0 {
				return s, usageErrorf("invalid --key-weight %q: want KEY=WEIGHT", pair)
			}
			w, err := strconv.Atoi(pair[i+1:])
			if err != nil {
				return s, usageErrorf("invalid --key-weight %q: the weight is not a number", pair)
			}
			if err := fieldcheck.KeyWeight(pair[:i], w); err != nil {
				return s, usageErrorf("invalid --key-weight %q: %w", pair, err)
			}
			s.KeyWeights[pair[:i]] = w
		}
	}
	if s.Weight == nil && s.Cap == nil && s.Rate == nil && s.Compaction == nil && s.CapPerKey == nil && s.RatePerKey == nil && s.KeyWeights == nil {
		if fl.Lookup("compact-over") != nil {
			return s, usageErrorf("give at least one of --cap, --rate, --cap-per-key, --rate-per-key and --compact-over")
		}
		if fl.Lookup("weight") != nil {
			return s, usageErrorf("give at least one of --weight, --cap, --rate, --cap-per-key, --rate-per-key and --key-weight")
		}
		return s, usageErrorf("give --cap, --rate, --cap-per-key or --rate-per-key")
	}
	return s, nil
}
