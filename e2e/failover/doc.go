// Package failover measures what Hopper does when its PostgreSQL primary fails and a streaming
// replica is promoted in its place (docs/deploy.md, "High availability"): the errors clients
// see, how long until work resumes, and whether a job is lost or runs twice.
//
// It is an experiment, not a CI test: it creates two throwaway PostgreSQL clusters of its own
// (initdb, pg_basebackup, the binaries of /usr/lib/postgresql/*/bin run as the postgres user,
// never the machine's server), a primary and a streaming replica, builds `hopper serve` and
// points it at both with a multi-host URL (target_session_attrs=read-write). The replica
// streams through a TCP link of the test's, which -lag holds before the failure, so that the
// replica lags as a loaded or distant one does. A remote worker works the jobs a client
// enqueues steadily (each with an idempotency key, retried until acknowledged); the primary is
// killed (an immediate shutdown, as a crash), the replica promoted, and the figures logged:
// enqueue errors, /readyz, the pause of the handlers, jobs acknowledged but missing on the new
// primary (lost), jobs that ran twice. Run it as root, from the repository:
//
//	make failover                       # both variants: asynchronous and synchronous replication
//	make failover LAG=500ms             # the replica cut off 500 ms before the primary fails
//	cd e2e && go test -tags failover -count=1 -v ./failover/ -run 'TestFailover/async' -promote-after 5s
package failover
