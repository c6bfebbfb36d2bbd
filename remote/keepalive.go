package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
)

// errStreamSilent ends a job stream on which the server said nothing for silentKeepalives
// of its keepalive periods: a proxy or the network dropped it without a word.
var errStreamSilent = errors.New("job stream silent")

// silentKeepalives is how many keepalive periods of silence make a stream dead.
const silentKeepalives = 3

// silence ends a stream (through end) once nothing came on it for silentKeepalives periods
// of the keepalive the server announced (StreamJobsResponse.keepalive); it watches nothing
// until the server announces one (an older server, or keepalives turned off).
type silence struct {
	clock clock.Clock
	end   context.CancelCauseFunc

	mu     sync.Mutex
	period time.Duration
	timer  clock.Timer
}

func newSilence(clk clock.Clock, end context.CancelCauseFunc) *silence {
	return &silence{clock: clk, end: end}
}

// heard notes a message; announced is its keepalive period, 0 when it carries none.
func (s *silence) heard(announced time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if announced > 0 {
		s.period = announced
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.period > 0 {
		limit := silentKeepalives * s.period
		s.timer = s.clock.AfterFunc(limit, func() {
			s.end(fmt.Errorf("%w: no message from the server for %s (%d keepalive periods); reconnecting",
				errStreamSilent, limit, silentKeepalives))
		})
	}
}

// stop stops watching.
func (s *silence) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}
