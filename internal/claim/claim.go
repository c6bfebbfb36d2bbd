// Package claim is the one claim loop: it decides when to claim jobs, for which queue and how
// many, and hands them over as slots free. The engine's producers (jobs run in this process),
// the server's job streams (jobs pushed to a remote worker) and the remote worker's polls
// each drive a Loop through a Driver of their own: how to claim, how to hand a job over, how
// to give one back. Everything else is the Loop's and is written once:
//
//   - units: the slots of a process or the credit of a stream, shared by the lanes (queues)
//     by weight (contract 14): a lane below its weighted share of the units that the wanting
//     lanes hold gets the next free unit, and the others leave it what it is owed;
//   - claims: at once after a wake-up, else once a quarter of a lane's units are free or a
//     short coalescing wait has passed; at most MaxInFlight claims per lane, the second only
//     while the last came back full; none while the lane is held (a failed claim's backoff, a
//     rate limit, the resource governor);
//   - claiming ahead (docs/workers.md): a claim also asks for the jobs that will have ended by
//     the time it returns, at most the lane's share of the units (where the loop has several
//     lanes; else at most AheadLimit; in a queue with fairness keys, for what ends within the
//     time the store says at most); those wait here, in claim
//     order, and start as units free, before any new claim of their lane; one that waits
//     MaxWait goes back to its queue, as all do when the governor holds and when the loop
//     stops;
//   - looking again: every Poll period at the lanes found empty, and when a claim's Result
//     says (a cap or a rate limit that will let a job start soon).
//
// The decisions are a state machine (plan.go) that tests drive step by step on a fake clock;
// Loop.Run (loop.go) is the goroutine around it.
package claim

import (
	"context"
	"log/slog"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
)

// Request is one claim the Loop asks its Driver to make.
type Request struct {
	// Lane is the queue to claim from (a Driver with a single lane may ignore it).
	Lane string
	// Units is how many jobs the claim may start at once: units reserved for it.
	Units int
	// Ahead is how many jobs it asks for beyond Units, to wait here for units (claiming
	// ahead). A store that finds a cap, a rate limit or a disabled kind takes none of them
	// and says so (Result.Restricted).
	Ahead int
	// Alone: no other claim of the lane is out, so this one may wait for work to come (a
	// long poll). A second claim is made only because the last came back full, and should
	// take what is ready and return.
	Alone bool
}

// Result is what a claim brought back.
type Result[J any] struct {
	Jobs []J
	// Err: the claim failed. Its jobs, if any, are still handed over; the lane claims again
	// after its backoff (LaneConfig.Retry).
	Err error
	// Restricted: a cap, a rate limit or a disabled kind applied, and none was taken ahead.
	Restricted bool
	// FairAhead, when positive: the queue has fairness keys, so the claim took its jobs in
	// turns between them; the lane's next claim asks ahead for what ends within FairAhead,
	// not in the whole round trip (see ahead). The store chooses it.
	FairAhead time.Duration
	// RetryAt, when set, is when to look at the lane again though nothing wakes it: a cap or
	// a rate limit held the claim short and will let a job start by then, or a batch that
	// lingers is ready then. A time, not a wait, so that it does not slip by the time the
	// result takes to reach the loop.
	RetryAt time.Time
	// HoldUntil, when set, holds the lane's claims back until then whatever wakes it: the
	// queue's rate limit allows no start before then.
	HoldUntil time.Time
	// Return: the jobs must not start (the worker was held back while the claim ran); they
	// go back to their queue, and the lane waits for a wake-up.
	Return bool
}

// RetryBy has the lane look again by at, if that is sooner than RetryAt says; a zero at
// changes nothing.
func (r *Result[J]) RetryBy(at time.Time) { r.RetryAt = earliest(r.RetryAt, at) }

// Driver is what differs between the loops: how to claim, and how jobs leave the Loop. The
// Loop calls Start and GiveBack from its own goroutine, one call at a time; Claim from a
// goroutine of each claim, several at once.
type Driver[J any] interface {
	// Claim makes one claim. It should not be cut short by ctx once it has begun to write:
	// jobs it claims must come back (a claim abandoned as it commits would leave them
	// running with nobody on them until their leases expire).
	Claim(ctx context.Context, r Request) Result[J]
	// Start hands jobs over, each on a unit the Loop holds for it until Lane.Done. An error
	// stops the Loop (the worker went away): Run returns it, and the jobs of the call are the
	// Driver's to dispose of.
	Start(lane string, jobs []J) error
	// GiveBack returns jobs claimed ahead that will not start to their queue, attempt
	// unspent.
	GiveBack(lane string, jobs []J, why Why)
}

// Why says why jobs claimed ahead go back.
type Why int

const (
	// Expired: no unit freed for them within MaxWait.
	Expired Why = iota
	// Governed: the resource governor holds the worker back.
	Governed
	// Stopping: the loop stops.
	Stopping
	// Returned: the claim's Result said so (the worker was held while it ran).
	Returned
)

// LaneConfig describes one lane (a queue).
type LaneConfig struct {
	Name string
	// Max bounds the units the lane holds (a queue's concurrency in a process); 0 is every
	// unit.
	Max int
	// Weight is the lane's weight in the share of the units (at least 1; default 1).
	Weight int
	// Retry spaces and logs the lane's failed claims; default Config.Retry.
	Retry *backoff.Tracker
}

// Config configures a Loop. Units and Lanes are required; zero fields take the defaults said.
type Config struct {
	Clock clock.Clock // default the wall clock
	// Units are the slots or credit the lanes share.
	Units int
	Lanes []LaneConfig
	// Batch bounds the jobs of one claim, units and ahead together (default Units).
	Batch int
	// AheadLimit bounds the jobs one claim asks for ahead; 0 asks none ahead. A lane asks
	// ahead for its share of the units that freed during its last claim's round trip, at most
	// AheadLimit and, where there are several lanes, its share of the units (and, after a
	// fair claim, Result.FairAhead).
	AheadLimit int
	// MaxWait bounds how long a job claimed ahead waits for a unit (default 1 s).
	MaxWait time.Duration
	// Coalesce is how long a lane with fewer than a quarter of its units free waits for more
	// before it claims (default 1 ms). Wake-ups never wait.
	Coalesce time.Duration
	// MaxInFlight bounds the claims a lane has out (default 2): the next batch is on its way
	// while one commits.
	MaxInFlight int
	// LongPoll: a lane with no claim out always has one out, since the claim waits for work
	// at the other end (Request.Alone: a long poll); a claim that came back short only stops
	// a second one. Without it a lane found empty waits for a wake-up or Poll.
	LongPoll bool
	// Poll is how often lanes found empty are looked at again without a wake-up, asked each
	// time the period starts; nil or a non-positive answer: never.
	Poll func() time.Duration
	// Held is the resource governor: while it holds, no claim starts and the jobs claimed
	// ahead go back. until, when set, is when the hold lapses by itself; changed is closed
	// (or receives) when it may have changed. Nil: never held.
	Held func(now time.Time) (held bool, until time.Time, changed <-chan struct{})
	// Retry spaces and logs failed claims of lanes that have no tracker of their own
	// (default: backoff.WorkPolicy, logging nothing).
	Retry *backoff.Tracker
	// Logger says when jobs claimed ahead go back (default discards).
	Logger *slog.Logger
}

// NoAhead, as a worker's configured claim-ahead bound (hopper.Config.ClaimAhead,
// remote.Config.ClaimAhead), claims jobs only for free slots.
const NoAhead = -1

const (
	defaultMaxWait     = time.Second
	defaultCoalesce    = time.Millisecond
	defaultMaxInFlight = 2
)

func (c Config) withDefaults() Config {
	c.Clock = clock.OrReal(c.Clock)
	if c.Batch <= 0 {
		c.Batch = max(c.Units, 1)
	}
	c.AheadLimit = max(c.AheadLimit, 0)
	if c.MaxWait <= 0 {
		c.MaxWait = defaultMaxWait
	}
	if c.Coalesce <= 0 {
		c.Coalesce = defaultCoalesce
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = defaultMaxInFlight
	}
	if c.Retry == nil {
		c.Retry = backoff.New(backoff.Config{Name: "claim jobs", Policy: backoff.WorkPolicy, Clock: c.Clock})
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
