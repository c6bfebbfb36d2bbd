package hoppertype

import "time"

// WorkerInfo is a worker outside the server's process (a remote worker) as a server saw it:
// one entry per worker name and queue.
type WorkerInfo struct {
	Name  string
	Queue string
	// Kinds are the kinds the worker takes; empty for any.
	Kinds        []string
	LastSeenAt   time.Time
	OpenStreams  int
	WaitingPolls int
	// Activated counts the jobs the server handed to the worker.
	Activated int64
	// Held: the worker's resource governor holds it back (it takes no new job).
	Held bool
	// BatchKinds are the kinds its last request takes in batches; empty for none.
	BatchKinds []string
}

// StreamInfo is a job stream open on a server, with its counters.
type StreamInfo struct {
	ID     string
	Worker string
	// Queues are the queues whose jobs the stream shares its credit between, the first
	// first.
	Queues []string
	Kinds  []string
	// Credit is the most jobs the stream has unfinished; InFlight how many it has now.
	Credit    int
	InFlight  int
	Pushed    int64
	Completed int64
	Failed    int64
	Released  int64
	OpenedAt  time.Time
}

// APIKey describes an API key of a server. Its secret is not part of it: a server shows a
// key's secret once, when it creates the key.
type APIKey struct {
	// ID is the key's public part.
	ID string
	// Name says what the key is for; unique among keys not revoked.
	Name string
	// Scopes are what the key may do: "enqueue", "work", "read", "admin".
	Scopes    []string
	CreatedAt time.Time
	// LastUsedAt is zero for a key never used; RevokedAt for a key not revoked.
	LastUsedAt time.Time
	RevokedAt  time.Time
}

// ServerInfo describes a running server: the build it runs and its store. A server gives it
// to anyone who asks, so it holds nothing secret.
type ServerInfo struct {
	// Version is the release the server was built at ("v0.1.0"), the Go toolchain's module
	// or pseudo-version, or "(devel)" when the build recorded none.
	Version string
	// Commit is the revision it was built from, or "unknown"; CommitTime when that commit
	// was made (zero when not recorded); Modified that the tree had uncommitted changes.
	Commit     string
	CommitTime time.Time
	Modified   bool
	// GoVersion is the Go release that built it ("go1.26.8"); Platform its GOOS/GOARCH.
	GoVersion string
	Platform  string
	// Store is the kind of database it keeps jobs in: "sqlite" or "postgres".
	Store string
	// SchemaVersion is the version of that database's schema: the newest migration applied.
	SchemaVersion int
	// InputLimits are the bounds it puts on what it is sent.
	InputLimits InputLimits
}
