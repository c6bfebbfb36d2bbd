package hoppertype

import "time"

// InputLimits are the bounds a server puts on what it is sent: longer text, larger payloads and
// values out of range are refused with a validation error naming the field. A server serves
// them (ServerInfo.InputLimits), so that clients and workers in any language respect the limits of
// the server they talk to instead of copies of their own. Lengths and sizes are in bytes;
// zero means the server did not say (it predates the field).
type InputLimits struct {
	// Names and identifiers.
	MaxIDLen        int // a job id
	MaxKindLen      int // a kind
	MaxQueueLen     int // a queue name
	MaxKeyLen       int // an idempotency, merge or group key
	MaxNameLen      int // filter values, cursors, time zones, schedule names
	MaxErrorCodeLen int // a business error's code
	// Free text about a job: a reason (release, cancel, resume), a progress message, the
	// error text (and stack) of a failed attempt.
	MaxReasonBytes          int
	MaxProgressMessageBytes int
	MaxErrorBytes           int
	// Payloads: a job's encoded args (the server's setting), its headers in all.
	MaxArgsBytes   int
	MaxHeaderBytes int
	// Numbers: priority 0–MaxPriority, attempts, rescues, a fleet-wide cap, error codes one
	// listing filters by.
	MaxPriority    int
	MaxAttempts    int
	MaxRescues     int
	MaxCap         int
	MaxFilterCodes int
	// Times: a run-at at most MaxRunAtPast ago and MaxRunAtFuture ahead (delays, snoozes and
	// retry-afters too); a job's timeout, a retention, a result's time to live.
	MaxRunAtPast   time.Duration
	MaxRunAtFuture time.Duration
	MaxTimeout     time.Duration
	MaxRetention   time.Duration
	MaxResultTTL   time.Duration
	// The worker protocol: the jobs of one activation, its longest wait, its queues; a
	// stream's credit and its kinds with a cap.
	MaxActivateJobs   int
	MaxActivateWait   time.Duration
	MaxActivateQueues int
	MaxStreamCredit   int
	MaxStreamKindCaps int
	// Dependencies: the most ids one job names in InsertOpts.After (its parents), and the
	// most steps of one workflow (a batch's jobs and its callback).
	MaxParents       int
	MaxWorkflowSteps int
	// Fan-out at run time: the most jobs one spawn adds.
	MaxSpawn int
}
