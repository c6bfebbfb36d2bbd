package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// The notification payloads the triggers (migrations/0001_init.sql) and QueueSetPaused send
// on the channel "<schema>_jobs".
const (
	// + queue, then (0016) a space and the smallest id of the jobs: jobs became claimable
	// there. Without an id (QueueSetPaused, 0001–0015) any of them may be concerned; "q:"
	// alone is every queue (a kind was enabled).
	payloadQueue  = "q:"
	payloadCancel = "c:" // + job id: a running job was canceled
	// + unix microseconds: jobs became scheduled, the earliest of them due then (0015)
	payloadScheduled = "s:"
	payloadSchedules = "S" // a schedule was created, changed or deleted (0015)
)

// defaultPingEvery is how long a subscription waits without a notification before it checks
// its connection, so a connection the network silently dropped ends the subscription.
const defaultPingEvery = 30 * time.Second

// Subscribe listens on the store's channel on a dedicated connection (not one of the pool's)
// and calls fn for each notification, in commit order, until ctx ends (it returns ctx's
// error) or the connection fails (it returns that error). It does not reconnect: the caller
// subscribes again, and should poll once after that, since notifications sent while no
// subscription was listening are lost. Each call opens its own connection.
//
// LISTEN needs a session of its own, so it does not work through a pooler in transaction
// mode: with Config.PollOnly, Subscribe just waits for ctx and workers rely on polling.
func (s *Store) Subscribe(ctx context.Context, fn func(store.Notification)) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if s.cfg.PollOnly {
		<-ctx.Done()
		return ctx.Err()
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return s.wrap(err, "subscribe: connect")
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(closeCtx) //nolint:errcheck // the connection is being dropped
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return s.wrap(err, "subscribe: listen on %q", s.channel)
	}
	// The claim cursors may be used only while every wake-up is heard: from now on, and not
	// after this subscription ends (notifications sent meanwhile are lost).
	s.cursors.subscribed(+1)
	defer s.cursors.subscribed(-1)
	if s.listening != nil {
		s.listening()
	}
	fn(store.Notification{Kind: store.Subscribed})
	for {
		if err := s.waitOne(ctx, conn, fn); err != nil {
			return err
		}
	}
}

// waitOne delivers one notification, or pings the connection after s.pingEvery without one.
func (s *Store) waitOne(ctx context.Context, conn *pgx.Conn, fn func(store.Notification)) error {
	waitCtx, cancel := context.WithTimeout(ctx, s.pingEvery)
	n, err := conn.WaitForNotification(waitCtx)
	cancel()
	switch {
	case err == nil:
		note, first, ok := parseNotification(n.Payload)
		if ok && note.Kind == store.JobsAvailable {
			// Before fn: a claim that fn starts must not start from a cursor past these jobs.
			s.cursors.heard(note.Queue, first)
		}
		if ok {
			fn(note)
		}
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := conn.Ping(pingCtx)
		cancel()
		if err != nil {
			return s.wrap(err, "subscribe: ping")
		}
		return nil
	default:
		return s.wrap(err, "subscribe: wait for notification")
	}
}

// parseNotification reads a payload; first is the smallest id of the jobs a queue wake-up
// names, "" when it names none.
func parseNotification(payload string) (note store.Notification, first string, ok bool) {
	if q, ok := strings.CutPrefix(payload, payloadQueue); ok {
		q, first, _ = strings.Cut(q, " ") // queue names hold no space
		return store.Notification{Kind: store.JobsAvailable, Queue: q}, first, true
	}
	if id, ok := strings.CutPrefix(payload, payloadCancel); ok {
		return store.Notification{Kind: store.JobCanceled, JobID: id}, "", true
	}
	if at, ok := strings.CutPrefix(payload, payloadScheduled); ok {
		us, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			return store.Notification{}, "", false
		}
		return store.Notification{Kind: store.JobsScheduled, At: time.UnixMicro(us)}, "", true
	}
	if payload == payloadSchedules {
		return store.Notification{Kind: store.SchedulesChanged}, "", true
	}
	return store.Notification{}, "", false
}
