package postgres

import "time"

// OnListening makes Subscribe call f once its LISTEN is in place, so tests know when
// notifications can no longer be missed.
func OnListening(s *Store, f func()) { s.listening = f }

// SetPingEvery shortens how long a subscription waits before it pings its connection.
func SetPingEvery(s *Store, d time.Duration) { s.pingEvery = d }
