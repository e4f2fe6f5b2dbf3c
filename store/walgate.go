package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"sync"
	"time"
)

// walGate keeps the read transactions of a SQLite store (BeginRead) from
// starving the engine's WAL checkpoints. The engine's checkpoint can only reset the WAL (start writing
// it from the beginning again) at a moment when no read transaction still
// needs frames of it; with reads that always overlap, that moment never
// comes and the WAL grows without bound. The gate watches the WAL file and,
// when it is large and has not been reset since the last look, stops new
// reads from starting until the open ones have ended and the engine has
// reset the WAL (or a short while has passed), then lets reads resume.
// Reads are short, so a drain costs new reads a few milliseconds, rarely.
//
// An expensive read (a list whose filter its index cannot serve, up to its
// statement limit) must not hold every cheap one hostage: while a read that
// has been open longer than idleWait is still open, the WAL cannot be reset
// anyway, so the gate lets reads through rather than drain (a pass); and a
// drain whose open reads do not all end within idleWait is given up. A
// cheap read therefore waits at most idleWait plus hold, however long the
// expensive reads beside it run; the WAL grows meanwhile, and is drained
// once they have ended (docs/contract.md#cost-model). Meanwhile no new
// expensive statement starts (heavyWait): the long reads end within their
// limit, and the WAL is reset, however many expensive reads keep coming.
//
// Large means the WAL's content, not its file: a reset does not shrink the
// file, so once the WAL has been reset the file's size stays put while the
// WAL fills it again, and only the salts of its frames tell how much of it
// is in use.
type walGate struct {
	walPath string
	// Threshold is the size of the WAL's content above which a WAL that is
	// not being reset triggers a drain.
	threshold int64
	// interval is how often the WAL is looked at.
	interval time.Duration
	// hold is the longest a drain keeps new reads waiting once the open ones
	// have ended.
	hold time.Duration
	// idleWait is the longest a drain waits for the open reads to end, and
	// the age past which an open read makes the gate pass rather than
	// drain.
	idleWait time.Duration

	mu     sync.Mutex
	active int
	// opened holds when each open read entered, by a number of its own.
	opened   map[uint64]time.Time
	nextRead uint64
	passes   int
	// pending is closed, and set to nil, once a WAL the gate passed beside
	// a long read has been reset; expensive statements wait for it.
	pending   chan struct{}
	idle      chan struct{} // closed when active drops to 0 during a drain
	draining  chan struct{} // non-nil while draining; closed when it ends
	lastLook  time.Time
	lastStamp [8]byte // checkpoint sequence and salt-1 of the WAL header
	lastSize  int64   // content size of the WAL at the last look
	drains    int
}

func newWALGate(path string) *walGate {
	return &walGate{
		walPath:   path + "-wal",
		threshold: 4 << 20,
		interval:  250 * time.Millisecond,
		hold:      250 * time.Millisecond,
		idleWait:  100 * time.Millisecond,
		opened:    map[uint64]time.Time{},
	}
}

// enter waits until a read may start and returns the function that marks it
// ended.
func (g *walGate) enter(ctx context.Context) (func(), error) {
	for {
		g.mu.Lock()
		if g.draining == nil && time.Since(g.lastLook) >= g.interval {
			g.look()
		}
		if g.draining == nil {
			g.active++
			id := g.nextRead
			g.nextRead++
			g.opened[id] = time.Now()
			g.mu.Unlock()
			return func() { g.leave(id) }, nil
		}
		wait := g.draining
		g.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (g *walGate) leave(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.opened, id)
	g.active--
	if g.active == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// look reads the WAL's size and header and starts a drain when the WAL is
// large and was not reset since the last look. g.mu is held.
func (g *walGate) look() {
	g.lastLook = time.Now()
	stamp, size, ok := walStamp(g.walPath)
	if !ok {
		return
	}
	// Growing without a reset since the last look: reads are in the way.
	stale := stamp == g.lastStamp && size > g.lastSize
	if !stale || size < g.threshold {
		// Reset, small, or not growing (the engine is not writing, and
		// only its next write could reset it): nothing to wait for.
		g.clearPending()
	}
	g.lastStamp, g.lastSize = stamp, size
	if size < g.threshold || !stale {
		return
	}
	now := time.Now()
	for _, at := range g.opened {
		if now.Sub(at) > g.idleWait {
			// A long read pins the WAL: draining would only make new
			// reads wait for it. New expensive statements wait instead.
			g.passes++
			if g.pending == nil {
				g.pending = make(chan struct{})
			}
			return
		}
	}
	g.drains++
	g.draining = make(chan struct{})
	idle := make(chan struct{})
	if g.active == 0 {
		close(idle)
	} else {
		g.idle = idle
	}
	go g.drain(idle, stamp)
}

// drain waits for the open reads to end, then for the engine to reset the
// WAL or for the hold to pass, and lets reads start again.
func (g *walGate) drain(idle chan struct{}, stamp [8]byte) {
	timeout := time.NewTimer(g.idleWait)
	defer timeout.Stop()
	deadline := time.Now().Add(g.hold)
	select {
	case <-idle:
	case <-timeout.C:
		// An open read is longer than a cheap one: give the drain up
		// rather than hold every new read behind it.
		deadline = time.Now()
	}
	for time.Now().Before(deadline) {
		if s, _, ok := walStamp(g.walPath); ok && s != stamp {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.idle = nil
	close(g.draining)
	g.draining = nil
	g.lastStamp, _, _ = walStamp(g.walPath)
	if g.lastStamp != stamp {
		g.clearPending()
	}
}

// clearPending lets expensive statements start again. g.mu is held.
func (g *walGate) clearPending() {
	if g.pending != nil {
		close(g.pending)
		g.pending = nil
	}
}

// heavyWait holds an expensive statement back while the WAL needs a reset
// that long reads are in the way of, until it has been reset or ctx ends.
// It looks at the WAL as enter does, so that a reset is seen without a
// cheap read to see it.
func (g *walGate) heavyWait(ctx context.Context) error {
	for {
		g.mu.Lock()
		if g.pending != nil && g.draining == nil && time.Since(g.lastLook) >= g.interval/4 {
			g.look()
		}
		wait := g.pending
		g.mu.Unlock()
		if wait == nil {
			return nil
		}
		t := time.NewTimer(g.interval / 4)
		select {
		case <-wait:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// walStamp returns the WAL header's checkpoint sequence number and first
// salt, which change whenever the WAL is reset, and the size of the WAL's
// content (see walInUse), or of its file when that cannot be told.
//
// It reads the -wal file only. SQLite holds POSIX advisory locks on the
// database and -shm files, and closing any descriptor of a file drops every
// such lock the process holds on it, those of SQLite's own connections
// included; so flowsnap must never open and close either of them itself.
func walStamp(path string) (stamp [8]byte, size int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return stamp, 0, false
	}
	defer f.Close()
	var hdr [32]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return stamp, 0, false
	}
	fi, err := f.Stat()
	if err != nil {
		return stamp, 0, false
	}
	binary.BigEndian.PutUint32(stamp[:4], binary.BigEndian.Uint32(hdr[12:16]))
	copy(stamp[4:], hdr[16:20])
	size = fi.Size()
	if used, ok := walInUse(f, hdr, size); ok {
		size = used
	}
	return stamp, size, true
}

// walInUse returns how many bytes of the WAL file hold frames written since
// the WAL was last reset. A reset makes SQLite write frames from the start
// of the file again, under new salts, and leaves the older frames after
// them; so the current frames are the longest run of frames from the start
// whose headers carry the WAL header's salts, and a binary search over the
// 24-byte frame headers finds where it ends. The layout is SQLite's WAL
// file format: a 32-byte header with the page size at byte 8 and the salts
// at 16..24, then frames of a 24-byte header (salts at 8..16) and a page.
func walInUse(f *os.File, hdr [32]byte, size int64) (int64, bool) {
	page := int64(binary.BigEndian.Uint32(hdr[8:12]))
	if page < 512 || page > 65536 || page&(page-1) != 0 {
		return 0, false
	}
	frame := 24 + page
	current := func(i int64) (bool, error) {
		var fh [24]byte
		if _, err := f.ReadAt(fh[:], 32+i*frame); err != nil {
			return false, err
		}
		return bytes.Equal(fh[8:16], hdr[16:24]), nil
	}
	lo, hi := int64(0), (size-32)/frame
	for lo < hi {
		mid := lo + (hi-lo)/2
		ok, err := current(mid)
		if err != nil {
			return 0, false
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return 32 + lo*frame, true
}
