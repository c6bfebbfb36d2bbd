package chaos

import "encoding/json"

// Kind is the kind of the jobs the chaos worker (chaosworker) runs.
const Kind = "chaos"

// Args are a chaos job's args: what its handler does (see chaosworker).
type Args struct {
	// SleepMS is how long the handler works; its context ends the work early.
	SleepMS int `json:"sleep_ms"`
	// Action: "" succeeds, "fail" returns an error, "crash" SIGKILLs the worker process and
	// "exit" calls os.Exit(3), at once (poison jobs).
	Action string `json:"action,omitempty"`
	// HeartbeatMS, when set, makes the handler heartbeat this often while it works.
	HeartbeatMS int `json:"heartbeat_ms,omitempty"`
	// FailAttempts makes attempts 1..FailAttempts fail (after their sleep) and later ones
	// succeed: a job that is retried with backoff, scheduled in between.
	FailAttempts int `json:"fail_attempts,omitempty"`
	// FanIn makes the handler, after its sleep, read its parents' results
	// (hopper.ParentResults) and complete with what it read (Result.Parents): a fan-in step of
	// a workflow. A failed read fails the attempt.
	FanIn bool `json:"fan_in,omitempty"`
}

// Kind names the handler.
func (Args) Kind() string { return Kind }

// Result is what a chaos job completes with: the worker and the lease token of the run that
// completed it, and for a FanIn job the parents it read.
type Result struct {
	Worker  string       `json:"worker"`
	Token   int64        `json:"token"`
	Parents []ParentSeen `json:"parents,omitempty"`
}

// ParentSeen is one parent as a FanIn job's handler read it (hopper.ParentResult).
type ParentSeen struct {
	ID      string          `json:"id"`
	Step    string          `json:"step"`
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
	Expired bool            `json:"expired,omitempty"`
}

// Line is one line of a chaos worker's log: one JSON object per line, written with one
// unbuffered write to a file opened with O_APPEND, so a SIGKILL loses nothing written.
type Line struct {
	Ev      string `json:"ev"` // start, end, heartbeat, rpc, crash
	T       int64  `json:"t"`  // unix nanoseconds: when it happened (an rpc: when the call was sent)
	Job     string `json:"job"`
	Token   int64  `json:"token"`
	Attempt int    `json:"attempt,omitempty"`
	Worker  string `json:"worker"`
	PID     int    `json:"pid"`
	Outcome string `json:"outcome,omitempty"` // end: ok, fail, canceled
	Proc    string `json:"proc,omitempty"`    // rpc: the WorkerService method
	Code    string `json:"code,omitempty"`    // rpc: ok or the Connect code
	Err     string `json:"err,omitempty"`
}
