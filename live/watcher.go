// Package live tells subscribers when the engine store changed. One Watcher
// per server reads the store's revision on an interval and, when it moved,
// the run ids that changed since the last look, once for all subscribers
// together: the statements per tick do not grow with the number of
// subscribers. A subscriber is only told that something it watches changed
// and up to which revision; it reads what it serves in a snapshot of its own.
package live

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
)

// SubscriptionLimit is the code of the error a subscription gets when the
// server already serves as many as it may.
const SubscriptionLimit = fault.SubscriptionLimit

// Unavailable is the code of the error a subscription gets when the server
// is shutting down.
const Unavailable fault.Code = "UNAVAILABLE"

// Options configure a Watcher. Zero values mean the defaults.
type Options struct {
	// Interval is how often the store's revision is read; default 100ms
	// (docs/benchmarks.md#subscriptions-fan-out says why).
	Interval time.Duration
	// MaxSubscriptions bounds the subscriptions open at once; default 1000.
	MaxSubscriptions int
	// ChangesPerTick bounds how many changed run ids one tick reads; a
	// larger burst is read over the following ticks. Default and most
	// snapshot.MaxChangesSize.
	ChangesPerTick int
	// Metrics, when set, counts subscribers, notifications and ticks.
	Metrics *Metrics
	// Logger receives tick failures; nil discards.
	Logger *slog.Logger
	// OnTick, when set, is called after every tick with the number of
	// statements it ran; for tests.
	OnTick func(statements int)
}

// The defaults of Options.
const (
	DefaultInterval         = 100 * time.Millisecond
	DefaultMaxSubscriptions = 1000
)

// Watcher watches one store for all the subscriptions of a server. Its
// methods are safe for concurrent use.
type Watcher struct {
	reader *snapshot.Reader
	opts   Options

	mu      sync.Mutex
	stopped bool
	open    int
	all     map[*Sub]struct{}
	byRun   map[string]map[*Sub]struct{}
	// last is the revision up to which changes were dispatched; seen says
	// whether a tick has read it yet.
	last   int64
	source string
	seen   bool
	// idle says the last tick found nothing new (see look).
	idle  bool
	ready chan struct{} // closed at the first successful tick
	// failing says the last tick failed; warned is when a failure was
	// last logged, and quiet how many were not logged since.
	failing bool
	warned  time.Time
	quiet   int
}

// warnEvery is how often the watcher logs that it cannot read the store,
// however often it tries.
const warnEvery = 30 * time.Second

// New returns a Watcher of reader's store. It watches nothing until Run.
func New(reader *snapshot.Reader, opts Options) *Watcher {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.ChangesPerTick <= 0 || opts.ChangesPerTick > snapshot.MaxChangesSize {
		opts.ChangesPerTick = snapshot.MaxChangesSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{reader: reader, opts: opts, all: map[*Sub]struct{}{}, byRun: map[string]map[*Sub]struct{}{}, ready: make(chan struct{})}
}

// Run ticks until ctx ends, then ends every subscription (their Done
// channels close) and refuses new ones. A tick that fails is logged and
// retried at the next; Run returns nil when ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	defer w.stop()
	for {
		w.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (w *Watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for s := range w.all {
		s.end()
	}
	for _, subs := range w.byRun {
		for s := range subs {
			s.end()
		}
	}
}

// tick reads the revision and, when it moved, the changed run ids, in one
// short read transaction of its own, and tells the subscribers concerned.
func (w *Watcher) tick(ctx context.Context) {
	start := time.Now()
	w.mu.Lock()
	min := w.last
	w.mu.Unlock()
	pos, changes, err := w.look(ctx, min)
	if fault.CodeOf(err) == fault.SourceChanged && min > 0 {
		// No copy of the store reaches the revision already dispatched:
		// it was restored to an earlier one. Look without a minimum, and
		// dispatch tells every subscriber.
		pos, changes, err = w.look(ctx, 0)
	}
	if m := w.opts.Metrics; m != nil {
		m.tick.Observe(time.Since(start).Seconds())
	}
	switch {
	case err == nil:
		w.recovered()
		w.dispatch(pos, changes)
	case ctx.Err() != nil:
	case fault.CodeOf(err) == fault.Stale:
		// Every replica is behind what was dispatched, and the primary is
		// not read: nothing newer to tell of yet.
		w.opts.Logger.Debug("live: no replica has reached the dispatched revision", slog.Int64("revision", min), slog.Any("error", err))
	default:
		w.failed(err)
	}
}

// failed logs a failed tick, once per warnEvery at most, and, when the
// store has just become unreadable, has every subscriber read it now, so
// that each gets the error as an event rather than silence.
func (w *Watcher) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.failing && w.seen {
		for s := range w.all {
			s.fail()
		}
		for _, subs := range w.byRun {
			for s := range subs {
				s.fail()
			}
		}
	}
	w.failing = true
	if time.Since(w.warned) < warnEvery {
		w.quiet++
		return
	}
	w.opts.Logger.Warn("live: reading the store's revision failed", slog.Any("error", err), slog.Int("unlogged", w.quiet))
	w.warned, w.quiet = time.Now(), 0
}

// recovered logs that the store can be read again after failed ticks.
func (w *Watcher) recovered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing {
		w.opts.Logger.Info("live: the store can be read again", slog.Int("unlogged", w.quiet))
		w.failing, w.warned, w.quiet = false, time.Time{}, 0
	}
}

// look reads the position and the changes in one short read at revision
// min or later. With replicas, reads land on copies that lag by different
// amounts; the minimum keeps a lagging one from looking like a store
// rewound to an earlier revision.
//
// After a tick that found nothing new, look first reads the position alone
// (snapshot.Read.Alone): one statement, without BEGIN and ROLLBACK, which
// is all an idle tick costs. Only when it moved are the changes read, in a
// read of their own; after a tick that found something the store is
// likely to have moved again, and look reads both at once.
func (w *Watcher) look(ctx context.Context, min int64) (snapshot.Position, []snapshot.Change, error) {
	statements := 0
	defer func() {
		if w.opts.OnTick != nil {
			w.opts.OnTick(statements)
		}
	}()
	w.mu.Lock()
	peek := w.idle
	w.mu.Unlock()
	if peek {
		rctx, rd := w.reader.Begin(ctx)
		rd.AtLeast(min)
		rd.Alone()
		pos, err := w.reader.Position(rctx)
		if err != nil || !w.moved(pos) {
			statements += rd.Statements()
			rd.End()
			w.setIdle(err == nil)
			return pos, nil, err
		}
		if !rd.RanAlone() {
			// A reader with replicas reads nothing alone: the
			// transaction is open, read the changes in it.
			pos, changes, err := w.read(rctx)
			statements += rd.Statements()
			rd.End()
			w.setIdle(err == nil && !w.movedSince(pos, changes))
			return pos, changes, err
		}
		statements += rd.Statements()
		rd.End()
		// The changes are read no earlier than the revision just seen.
		min = max(min, pos.Revision)
	}
	rctx, rd := w.reader.Begin(ctx)
	rd.AtLeast(min)
	pos, changes, err := w.read(rctx)
	statements += rd.Statements()
	rd.End()
	w.setIdle(err == nil && !w.movedSince(pos, changes))
	return pos, changes, err
}

func (w *Watcher) setIdle(idle bool) {
	w.mu.Lock()
	w.idle = idle
	w.mu.Unlock()
}

// moved reports whether pos is a later revision of the store whose changes
// are being dispatched: the changes up to it are to be read.
func (w *Watcher) moved(pos snapshot.Position) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen && pos.Source == w.source && pos.Revision > w.last
}

// movedSince reports whether a read found anything to dispatch.
func (w *Watcher) movedSince(pos snapshot.Position, changes []snapshot.Change) bool {
	return len(changes) > 0 || w.moved(pos)
}

// read returns the position and the changes after the last dispatched
// revision, or none when the revision did not move.
func (w *Watcher) read(ctx context.Context) (snapshot.Position, []snapshot.Change, error) {
	pos, err := w.reader.Position(ctx)
	if err != nil {
		return pos, nil, err
	}
	if !w.moved(pos) {
		return pos, nil, nil
	}
	w.mu.Lock()
	last := w.last
	w.mu.Unlock()
	n := w.opts.ChangesPerTick
	feed, err := w.reader.Changes(ctx, snapshot.ChangesRequest{Since: last, First: &n})
	if err != nil {
		return pos, nil, err
	}
	// With more changes than a tick reads, the rest come at the next
	// ticks; position subscribers hear of the revision the changes reached.
	pos.Revision = feed.NextRevision
	// The reader's run cache hears of every change too. A feed cut short
	// lacks the runs whose change before NextRevision a later one
	// replaced: the cache is told that it does not know them.
	if feed.HasMore {
		w.reader.ChangesUnknown(pos.Source, feed.NextRevision)
	} else {
		w.reader.ChangesSeen(pos.Source, last, feed.NextRevision, feed.Changes)
	}
	return pos, feed.Changes, nil
}

func (w *Watcher) dispatch(pos snapshot.Position, changes []snapshot.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !w.seen:
		// The first look sets where to start from; subscriptions are taken
		// only from now on, so each one's first event is read after it and
		// nothing falls between the two.
		w.seen, w.source, w.last = true, pos.Source, pos.Revision
		w.reader.ChangesUnknown(pos.Source, pos.Revision)
		close(w.ready)
		return
	case pos.Source != w.source || pos.Revision < w.last:
		// Another store, or one restored to an earlier revision: what the
		// subscribers hold may be from a history that no longer exists.
		// Tell every one of them, and start over from here.
		w.source, w.last = pos.Source, pos.Revision
		w.reader.ChangesUnknown(pos.Source, pos.Revision)
		w.notifyAll(pos.Revision, true)
		return
	case pos.Revision == w.last:
		return
	}
	w.last = pos.Revision
	for s := range w.all {
		s.notify(pos.Revision, false)
	}
	for _, c := range changes {
		for s := range w.byRun[c.RunID] {
			s.notify(c.Revision, false)
		}
	}
}

// notifyAll is called with w.mu held.
func (w *Watcher) notifyAll(revision int64, reset bool) {
	for s := range w.all {
		s.notify(revision, reset)
	}
	for _, subs := range w.byRun {
		for s := range subs {
			s.notify(revision, reset)
		}
	}
}

// Subscribe opens a subscription that watches nothing yet (see WatchAll and
// WatchRun). It fails with SubscriptionLimit when MaxSubscriptions are open,
// and with Unavailable once Run has ended. Close it when done.
func (w *Watcher) Subscribe() (*Sub, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, fault.Errorf(Unavailable, "the server is shutting down and takes no new subscriptions")
	}
	if !w.seen {
		return nil, fault.Errorf(Unavailable, "the server has not read the store's revision yet; try again shortly")
	}
	if w.open >= w.opts.MaxSubscriptions {
		return nil, fault.Errorf(SubscriptionLimit, "the server already serves %d subscriptions, the most it may; try again later", w.opts.MaxSubscriptions)
	}
	w.open++
	if m := w.opts.Metrics; m != nil {
		m.open.Inc()
	}
	return &Sub{w: w, changed: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// Seen returns the position the watcher's last tick read and dispatched,
// and false before the first tick and while ticks fail.
func (w *Watcher) Seen() (snapshot.Position, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return snapshot.Position{Source: w.source, Revision: w.last}, w.seen && !w.failing
}

// Ready is closed once the Watcher has read the store's revision for the
// first time; Subscribe fails before.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Open returns how many subscriptions are open.
func (w *Watcher) Open() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open
}

// Sub is one subscription's line to the Watcher. Changes are coalesced: a
// subscriber that has not taken the last notification yet is not queued a
// second one, only told the newer revision when it takes it. Its methods
// are safe for concurrent use.
type Sub struct {
	w       *Watcher
	changed chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	runID   string
	all     bool
	pending int64
	from    int64
	reset   bool
	// failure says the store became unreadable since the last Failure.
	failure bool
	ended   bool
	closed  bool
}

// WatchAll makes s hear of every new revision of the store.
func (s *Sub) WatchAll() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.all[s] = struct{}{}
	s.all = true
	s.from = s.w.last
}

// WatchRun makes s hear of every change of run id, its deletion included.
func (s *Sub) WatchRun(id string) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	subs := s.w.byRun[id]
	if subs == nil {
		subs = map[*Sub]struct{}{}
		s.w.byRun[id] = subs
	}
	subs[s] = struct{}{}
	s.runID = id
	s.from = s.w.last
}

// From is the revision up to which changes had been told when s began to
// watch: s hears of later ones only, so its first read must be at least
// there (with replicas, a read may land on one that is behind it).
func (s *Sub) From() int64 {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.from
}

// Changed receives a value when something s watches changed; Take then
// says up to which revision.
func (s *Sub) Changed() <-chan struct{} { return s.changed }

// Done is closed when the Watcher stops (the server shuts down).
func (s *Sub) Done() <-chan struct{} { return s.done }

// Take returns the latest revision s was told of since the last Take, and
// whether the store was replaced or rewound meanwhile (then the subscriber
// must not compare revisions with what it served before).
func (s *Sub) Take() (revision int64, reset bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	revision, reset = s.pending, s.reset
	s.pending, s.reset = 0, false
	return revision, reset
}

// notify is called with w.mu held.
func (s *Sub) notify(revision int64, reset bool) {
	s.mu.Lock()
	s.pending = max(s.pending, revision)
	s.reset = s.reset || reset
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
		if m := s.w.opts.Metrics; m != nil {
			m.coalesced.Inc()
		}
	}
}

// fail is called with w.mu held.
func (s *Sub) fail() {
	s.mu.Lock()
	s.failure = true
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Failure reports, once, that the store became unreadable since it was
// last asked: the subscriber should read now, and send the read's error.
func (s *Sub) Failure() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failure
	s.failure = false
	return f
}

// end is called with w.mu held.
func (s *Sub) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.done)
	}
}

// Sent counts one event sent to the subscriber.
func (s *Sub) Sent() {
	if m := s.w.opts.Metrics; m != nil {
		m.sent.Inc()
	}
}

// Close ends s and frees its place. It is safe to call more than once.
func (s *Sub) Close() {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.end()
	delete(w.all, s)
	if subs := w.byRun[s.runID]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(w.byRun, s.runID)
		}
	}
	w.open--
	if m := w.opts.Metrics; m != nil {
		m.open.Dec()
	}
}
