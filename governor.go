package hopper

import (
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/governor"
)

// ErrGovernorUnsupported: Config.MaxCPU or MaxMemory is set where the resource governor
// cannot measure the process (it reads Linux's cgroup v2 and /proc files).
var ErrGovernorUnsupported = governor.ErrUnsupported

// GovernorStatus is the resource governor's last measurement and decision (contract 15).
type GovernorStatus struct {
	// Enabled: Config.MaxCPU or MaxMemory is set and the client has Workers. Otherwise it
	// has no governor and never holds.
	Enabled bool
	// Holding: the process claims no new jobs (its use reached a limit and has not fallen
	// under 90 % of it since).
	Holding bool
	// Since is when the governor last changed between holding and not.
	Since time.Time
	// CPU is the smoothed CPU use, as a fraction of the CPU available to the process.
	CPU float64
	// Memory is the memory in use and MemoryLimit what the process may use (0: unbounded),
	// in bytes.
	Memory, MemoryLimit int64
	// MaxCPU and MaxMemory are the configured limits (0: none).
	MaxCPU    float64
	MaxMemory int64
}

// Governor returns the resource governor's state. It is safe for concurrent use.
func (c *Client) Governor() GovernorStatus {
	g := c.engine.Governor()
	if g == nil {
		return GovernorStatus{}
	}
	st := g.Status()
	maxCPU, maxMem := g.Limits()
	return GovernorStatus{Enabled: true, Holding: st.Holding, Since: st.Since, CPU: st.CPU, Memory: st.Memory,
		MemoryLimit: st.MemoryLimit, MaxCPU: maxCPU, MaxMemory: maxMem}
}

// newGovernor returns the governor of cfg's limits, or nil without any.
func newGovernor(cfg Config, clk Clock) (*governor.Governor, error) {
	g, err := governor.New(governor.Config{MaxCPU: cfg.MaxCPU, MaxMemory: cfg.MaxMemory, Clock: clk,
		Logger: cfg.Logger, Attrs: []any{"node", cfg.WorkerID}})
	if err != nil {
		return nil, fmt.Errorf("hopper: Config.MaxCPU, MaxMemory: %w", err)
	}
	return g, nil
}
