package postgres

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
)

// OnListening makes Subscribe call f once its LISTEN is in place, so tests know when
// notifications can no longer be missed.
func OnListening(s *Store, f func()) { s.listening = f }

// SetPingEvery shortens how long a subscription waits before it pings its connection.
func SetPingEvery(s *Store, d time.Duration) { s.pingEvery = d }

// SetWakeClock paces the wake-ups of s (opened with a WakeInterval) on c instead of the wall
// clock. It must be called before s inserts anything.
func SetWakeClock(s *Store, c clock.Clock) { s.wakes.clock = c }

// MergeLock is the advisory lock a merge takes for kind's key, as pg_locks shows it: classid
// and objid are its high and low 32 bits.
func MergeLock(s *Store, kind, key string) (classid, objid uint32) {
	k := uint64(s.mergeLock(kind, key))
	return uint32(k >> 32), uint32(k)
}

// WakeBurst is how many wake-ups a queue's inserts send before they are paced.
const WakeBurst = wakeBurst

// HistoryRows counts job id's rows in job_events and job_attempts.
func HistoryRows(s *Store, id string) (events, attempts int, err error) {
	err = s.pool.QueryRow(context.Background(), s.sql(`SELECT
		(SELECT count(*) FROM {schema}.job_events WHERE job_id = $1),
		(SELECT count(*) FROM {schema}.job_attempts WHERE job_id = $1)`), id).Scan(&events, &attempts)
	return events, attempts, err
}

// KeyBucketRows counts the stored buckets of the rate limits per key.
func KeyBucketRows(s *Store) (n int, err error) {
	err = s.pool.QueryRow(context.Background(), s.sql(`SELECT count(*) FROM {schema}.key_buckets`)).Scan(&n)
	return n, err
}
