package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hopperjobs/hopper"
	"github.com/spf13/cobra"
)

// addGovernorFlags adds serve's resource governor flags (contract 15).
func addGovernorFlags(cmd *cobra.Command, o *serveOptions) {
	f := cmd.Flags()
	f.Var(&o.maxCPU, "max-cpu", "take no new job while the server uses this fraction of the CPU available to it or more, "+
		"0–1 or a percentage (0.8, 80%); 0: no limit")
	f.Var(&o.maxMemory, "max-memory", "take no new job while the server uses this much memory or more (512MiB, 2GiB, 1G); 0: no limit")
}

// governorError names the flag of a governor the client refuses: out of range, or not
// possible on this system.
func governorError(err error) error {
	if errors.Is(err, hopper.ErrGovernorUnsupported) {
		return usageErrorf("--max-cpu, --max-memory: %v", err)
	}
	return serveFlagError(err)
}

// fraction is a flag's value between 0 and 1, given as a number (0.8) or a percentage (80%).
type fraction float64

func (f *fraction) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *fraction) Type() string   { return "fraction" }

func (f *fraction) Set(s string) error {
	v, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%q is not a number", s)
	}
	if percent {
		x /= 100
	}
	if x < 0 || x > 1 {
		return fmt.Errorf("%s is outside 0–1 (0–100%%)", s)
	}
	*f = fraction(x)
	return nil
}

// byteSize is a flag's size in bytes: a number with an optional unit, decimal (k, M, G, T:
// powers of 1000) or binary (Ki, Mi, Gi, Ti: powers of 1024), with or without a final B, in
// any case: 512MiB, 2GiB, 1G, 1.5GB, 1048576.
type byteSize int64

func (b *byteSize) Type() string { return "size" }

// String writes the size in the largest binary unit that divides it.
func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// sizeUnits are the units parseByteSize knows, in lower case without their final "b".
var sizeUnits = map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
	"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40}

// parseByteSize reads a byteSize.
func parseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if unit != "b" {
		unit = strings.TrimSuffix(unit, "b")
	} else {
		unit = ""
	}
	mult, ok := sizeUnits[unit]
	x, err := strconv.ParseFloat(num, 64)
	switch {
	case !ok || err != nil || num == "":
		return 0, fmt.Errorf("%q is not a size (like 512MiB, 2GiB, 1G or a number of bytes)", s)
	case x*mult >= math.MaxInt64:
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(math.Round(x * mult)), nil
}
