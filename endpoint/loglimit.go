package endpoint

import (
	"sync"
	"time"
)

// logLimiter lets through at most burst lines per reason in each second, so
// a store that is down (every request failing) or a flood of bad requests
// logs a few lines a second, each saying how many were left out before it.
type logLimiter struct {
	mu    sync.Mutex
	burst int
	now   func() time.Time
	slots map[string]*logSlot
}

type logSlot struct {
	second     int64
	lines      int
	suppressed int
}

func newLogLimiter(burst int) *logLimiter {
	return &logLimiter{burst: burst, now: time.Now, slots: map[string]*logSlot{}}
}

// allow reports whether a line for reason may be written now, and how many
// lines for it were left out since the last one written.
func (l *logLimiter) allow(reason string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.slots[reason]
	if s == nil {
		s = &logSlot{}
		l.slots[reason] = s
	}
	sec := l.now().Unix()
	if sec != s.second {
		s.second, s.lines = sec, 0
	}
	if s.lines >= l.burst {
		s.suppressed++
		return false, 0
	}
	s.lines++
	n := s.suppressed
	s.suppressed = 0
	return true, n
}
