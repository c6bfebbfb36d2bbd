// Package chaos is Hopper's fault-injection suite: it builds the real `hopper` binary and a
// small remote worker (chaosworker), runs them as processes, and breaks things while jobs
// flow — SIGKILL of workers and servers, SIGSTOP of a worker, PostgreSQL cut off, slowed,
// reset and restarted, a full disk, clock jumps, the leader killed while schedules fire,
// workers and servers killed under fan-out/fan-in workflows — then checks from the outside
// (the RPC API, the workers' logs, the database files) that no acknowledged job was lost and
// every extra run is explained by a recorded attempt. Each scenario prints its figures as a
// table row.
//
// It lives in the e2e module (its own go.mod), so toxiproxy stays out of the hopper module's
// requirements, and its tests are behind the build tag chaos, so `go test ./...` in e2e runs
// the browser tests without them. From the repository's root:
//
//	make chaos-short   # the short variants, as CI runs them (under 5 minutes)
//	make chaos         # the full variants (-args -full)
//
// docs/reliability.md describes the scenarios and holds the latest figures.
package chaos
