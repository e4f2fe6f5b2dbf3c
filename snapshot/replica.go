package snapshot

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
)

// Reading from more than one copy of the store (docs/contract.md#replicas).
//
// A Reader reads its primary store, or, after UseReplicas, PostgreSQL hot
// standbys of it: each read transaction goes to a healthy replica (in turn)
// whose revision is at least the read's minimum (Read.AtLeast), and to the
// primary only when no replica is healthy. A replica that lags behind the
// minimum is waited for up to StaleWait; then the read goes to the primary
// (StaleFromPrimary) or fails with STALE. A minimum above the primary's own
// revision can never be reached and fails at once with SOURCE_CHANGED: the
// client's revision came from another history (a restored or replaced
// store). Without replicas — SQLite, or PostgreSQL without --replica — the
// store is its own primary: a minimum at or below its revision is met, one
// above it is SOURCE_CHANGED, and nothing waits.

// ReplicaOptions configure UseReplicas. Zero values mean the defaults.
type ReplicaOptions struct {
	// StaleWait is how long a read waits for a replica to reach its
	// minimum revision (default 2s).
	StaleWait time.Duration
	// StaleFromPrimary sends a read whose minimum no replica reached within
	// StaleWait to the primary; when false such a read fails with STALE.
	StaleFromPrimary bool
	// CheckInterval is how often replicas and the primary are checked
	// (default 1s); while reads wait, they are checked every 10ms.
	CheckInterval time.Duration
	// MaxLag bounds how far a replica may be behind the primary and still
	// be read; zero fields are unbounded.
	MaxLag MaxLag
}

// MaxLag is how far behind the primary a replica may be and stay healthy
// (docs/contract.md#replicas): by revisions (the primary's revision minus
// the replica's) and by time (how long ago the primary was first seen
// at a revision the replica has not reached). Both are judged against what
// the last check saw of the primary. A replica past either is unhealthy:
// no read, and so no subscription, goes to it until it is back within.
type MaxLag struct {
	Revisions int64
	Time      time.Duration
}

// DefaultMaxLag is the bound on a replica's lag when none is given.
var DefaultMaxLag = MaxLag{Time: 5 * time.Second}

// DefaultStaleWait is how long a read waits for a lagging replica when
// ReplicaOptions leaves StaleWait zero.
const DefaultStaleWait = 2 * time.Second

// waitingCheckInterval is how often replicas are checked while a read waits
// for one: short, since the wait is bounded by StaleWait.
const waitingCheckInterval = 10 * time.Millisecond

// checkTimeout bounds one health check of one database.
const checkTimeout = time.Second

// ReplicaStatus is what the last check saw of one replica.
type ReplicaStatus struct {
	// Name names the replica without credentials.
	Name string
	// Healthy is whether reads may go to it: it answered the last check
	// and is a copy of the primary's store (the same source).
	Healthy bool
	// Revision is the revision it was at when last seen.
	Revision int64
	// Lag is the primary's revision minus the replica's, in revisions;
	// -1 when either is unknown.
	Lag int64
	// LagTime is how long ago the primary was first seen at a revision the
	// replica has not reached; zero when it has reached the primary's, or
	// when Lag is unknown.
	LagTime time.Duration
	// Problem says why it is not healthy; empty when it is.
	Problem string
}

type replica struct {
	db *store.DB

	mu       sync.Mutex
	checked  bool
	healthy  bool
	answered bool // at the last check, at revision
	revision int64
	problem  string
}

func (rp *replica) state() (healthy bool, revision int64) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.healthy, rp.revision
}

// set records a check of the replica: revision is where it answered, 0
// when it did not.
func (rp *replica) set(healthy bool, revision int64, problem string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.checked, rp.healthy, rp.problem = true, healthy, problem
	rp.answered = revision > 0
	if revision > rp.revision {
		rp.revision = revision
	}
}

type replicaSet struct {
	primary *store.DB
	reps    []*replica
	opts    ReplicaOptions
	source  string
	turn    atomic.Uint32
	waiters atomic.Int32
	poke    chan struct{}

	mu         sync.Mutex
	primaryRev int64
	// primarySeen holds when each revision of the primary was first seen,
	// in order, for judging a replica's lag in time; bounded.
	primarySeen []seenAt
	changed     chan struct{} // closed, and replaced, after every check
}

type seenAt struct {
	revision int64
	at       time.Time
}

// maxPrimarySeen bounds primarySeen: one entry per check that saw the
// primary move, some 17 minutes at the default interval. A replica behind
// them all is judged from the oldest.
const maxPrimarySeen = 1024

// UseReplicas makes r read from replicas, PostgreSQL hot standbys of its
// store (the primary). It reads the primary's position to learn the source
// every replica must have; ctx bounds that read. Call it before the first
// read, and run WatchReplicas while reading.
func (r *Reader) UseReplicas(ctx context.Context, replicas []*store.DB, opts ReplicaOptions) error {
	if len(replicas) == 0 {
		return nil
	}
	if !r.db.HasStandbys() {
		return fmt.Errorf("replicas need a PostgreSQL primary; %s is not one", r.db)
	}
	if opts.StaleWait <= 0 {
		opts.StaleWait = DefaultStaleWait
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = time.Second
	}
	tx, pos, err := readPosition(ctx, r.db)
	if err != nil {
		return fmt.Errorf("reading the primary's position: %w", err)
	}
	_ = tx.Rollback(ctx)
	s := &replicaSet{primary: r.db, opts: opts, source: pos.Source,
		poke: make(chan struct{}, 1), changed: make(chan struct{})}
	s.sawPrimary(pos.Revision)
	for _, db := range replicas {
		if !db.HasStandbys() {
			return fmt.Errorf("replica %s is not PostgreSQL", db)
		}
		s.reps = append(s.reps, &replica{db: db})
	}
	s.check(ctx)
	r.replicas = s
	return nil
}

// WatchReplicas checks the replicas and the primary every CheckInterval
// (more often while reads wait) until ctx ends. Without replicas it returns
// at once.
func (r *Reader) WatchReplicas(ctx context.Context) {
	s := r.replicas
	if s == nil {
		return
	}
	for {
		every := s.opts.CheckInterval
		if s.waiters.Load() > 0 {
			every = waitingCheckInterval
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.poke:
		case <-t.C:
		}
		t.Stop()
		s.check(ctx)
	}
}

// Replicas returns what the last check saw of each replica, in the order
// UseReplicas was given them; nil without replicas.
func (r *Reader) Replicas() []ReplicaStatus {
	s := r.replicas
	if s == nil {
		return nil
	}
	s.mu.Lock()
	primary := s.primaryRev
	s.mu.Unlock()
	out := make([]ReplicaStatus, len(s.reps))
	for i, rp := range s.reps {
		rp.mu.Lock()
		st := ReplicaStatus{Name: rp.db.String(), Healthy: rp.healthy, Revision: rp.revision, Lag: -1, Problem: rp.problem}
		if !rp.checked {
			st.Problem = "not checked yet"
		}
		answered := rp.answered
		rp.mu.Unlock()
		if answered {
			st.Lag = max(primary-st.Revision, 0)
			st.LagTime = s.lagTime(st.Revision, time.Now())
		}
		out[i] = st
	}
	return out
}

// check reads the position of the primary and of every replica, at once.
func (s *replicaSet) check(ctx context.Context) {
	var wg sync.WaitGroup
	for _, rp := range s.reps {
		wg.Go(func() {
			pos, err := peek(ctx, rp.db)
			switch {
			case err != nil:
				rp.set(false, 0, fault.MessageOf(err))
			case pos.Source != s.source:
				rp.set(false, 0, "it is a copy of another store (its source differs from the primary's)")
			default:
				s.judge(rp, pos.Revision)
			}
		})
	}
	if pos, err := peek(ctx, s.primary); err == nil {
		s.sawPrimary(pos.Revision)
	}
	wg.Wait()
	// The primary may have been read after a replica: judge every answer
	// against what this check saw of it.
	for _, rp := range s.reps {
		rp.mu.Lock()
		judge, rev := rp.answered, rp.revision
		rp.mu.Unlock()
		if judge {
			s.judge(rp, rev)
		}
	}
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// peek reads db's position in a read of its own.
func peek(ctx context.Context, db *store.DB) (Position, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	tx, pos, err := readPosition(ctx, db)
	if err != nil {
		return Position{}, err
	}
	_ = tx.Rollback(ctx)
	return pos, nil
}

func (s *replicaSet) sawPrimary(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.primaryRev && len(s.primarySeen) > 0 {
		return
	}
	s.primaryRev = rev
	if len(s.primarySeen) == maxPrimarySeen {
		s.primarySeen = append(s.primarySeen[:0], s.primarySeen[maxPrimarySeen/2:]...)
	}
	s.primarySeen = append(s.primarySeen, seenAt{revision: rev, at: time.Now()})
}

// lagTime is how long ago the primary was first seen past revision rev.
func (s *replicaSet) lagTime(rev int64, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.primarySeen), func(i int) bool { return s.primarySeen[i].revision > rev })
	if i == len(s.primarySeen) {
		return 0
	}
	return now.Sub(s.primarySeen[i].at)
}

// tooFarBehind says why a replica at revision rev is past the MaxLag bound,
// or "" when it is within it.
func (s *replicaSet) tooFarBehind(rev int64) string {
	bound := s.opts.MaxLag
	if bound.Revisions <= 0 && bound.Time <= 0 {
		return ""
	}
	lag := s.primaryRevision() - rev
	if lag <= 0 {
		return ""
	}
	if bound.Revisions > 0 && lag > bound.Revisions {
		return fmt.Sprintf("it lags %d revisions behind the primary, more than the bound of %d", lag, bound.Revisions)
	}
	if took := s.lagTime(rev, time.Now()); bound.Time > 0 && took > bound.Time {
		return fmt.Sprintf("it lags %d revisions behind the primary, which reached them %s ago, more than the bound of %s", lag, took.Round(time.Millisecond), bound.Time)
	}
	return ""
}

// judge records that replica rp answered at revision rev: healthy unless
// it is past the lag bound.
func (s *replicaSet) judge(rp *replica, rev int64) {
	if problem := s.tooFarBehind(rev); problem != "" {
		rp.set(false, rev, problem)
		return
	}
	rp.set(true, rev, "")
}

func (s *replicaSet) primaryRevision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primaryRev
}

func (s *replicaSet) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// begin opens the read transaction of a read whose minimum revision is min.
func (r *Reader) begin(ctx context.Context, min int64) (store.Tx, Position, error) {
	if r.replicas == nil {
		return beginPrimary(ctx, r.db, min)
	}
	return r.replicas.begin(ctx, min)
}

// beginPrimary reads the primary, which no minimum can be ahead of.
func beginPrimary(ctx context.Context, db *store.DB, min int64) (store.Tx, Position, error) {
	tx, pos, err := readPosition(ctx, db)
	if err != nil {
		return nil, Position{}, err
	}
	if pos.Revision < min {
		_ = tx.Rollback(ctx)
		return nil, Position{}, beyondStore(min, pos.Revision)
	}
	return tx, pos, nil
}

func (s *replicaSet) begin(ctx context.Context, min int64) (store.Tx, Position, error) {
	var deadline time.Time
	for {
		healthy, best := 0, int64(-1)
		start := int(s.turn.Add(1))
		for i := range s.reps {
			rp := s.reps[(start+i)%len(s.reps)]
			ok, rev := rp.state()
			if !ok {
				continue
			}
			if problem := s.tooFarBehind(rev); problem != "" {
				// The primary has moved on since the replica's last check.
				rp.set(false, rev, problem)
				continue
			}
			healthy++
			best = max(best, rev)
			if rev < min {
				continue
			}
			tx, pos, err := readPosition(ctx, rp.db)
			if err != nil {
				if ctx.Err() != nil {
					return nil, Position{}, err
				}
				rp.set(false, 0, fault.MessageOf(err))
				continue
			}
			if pos.Source != s.source {
				_ = tx.Rollback(ctx)
				rp.set(false, 0, "it is a copy of another store (its source differs from the primary's)")
				continue
			}
			if problem := s.tooFarBehind(pos.Revision); problem != "" {
				_ = tx.Rollback(ctx)
				rp.set(false, pos.Revision, problem)
				healthy--
				continue
			}
			rp.set(true, pos.Revision, "")
			if pos.Revision >= min {
				return tx, pos, nil
			}
			_ = tx.Rollback(ctx)
		}
		if healthy == 0 {
			return beginPrimary(ctx, s.primary, min)
		}
		if min > s.primaryRevision() {
			// The primary may have moved on since it was last checked.
			pos, err := peek(ctx, s.primary)
			if err != nil {
				return nil, Position{}, err
			}
			s.sawPrimary(pos.Revision)
			if min > pos.Revision {
				return nil, Position{}, beyondStore(min, pos.Revision)
			}
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(s.opts.StaleWait)
		}
		if !now.Before(deadline) {
			if s.opts.StaleFromPrimary {
				return beginPrimary(ctx, s.primary, min)
			}
			return nil, Position{}, stale(min, best, s.opts.StaleWait)
		}
		if err := s.wait(ctx, deadline); err != nil {
			return nil, Position{}, err
		}
	}
}

// wait returns after the next check of the replicas, at deadline, or with
// a TIMEOUT error when ctx ends.
func (s *replicaSet) wait(ctx context.Context, deadline time.Time) error {
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	changed := s.changes()
	select {
	case s.poke <- struct{}{}:
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fault.Wrap(fault.Timeout, ctx.Err(), "the operation ran out of time waiting for a replica")
	case <-changed:
	case <-t.C:
	}
	return nil
}

// AtLeast makes the read happen at revision min or later (docs/contract.md#replicas): a
// client's minimum revision, or the revision a cursor was issued at. It
// takes effect only before the first read; the larger of several minimums
// holds.
func (rd *Read) AtLeast(min int64) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.tx == nil && min > rd.min {
		rd.min = min
	}
}

func beyondStore(min, revision int64) error {
	e := fault.Errorf(fault.SourceChanged, "revision %d is beyond the store's revision %d: the store is not the one that revision came from (restored or replaced); resync", min, revision)
	e.Details = map[string]any{"minRevision": min, "revision": revision}
	return e
}

func stale(min, available int64, waited time.Duration) error {
	e := fault.Errorf(fault.Stale, "no replica reached revision %d within %s (the latest is at revision %d); retry", min, waited, available)
	e.Details = map[string]any{"minRevision": min, "availableRevision": available}
	return e
}

// notBefore refuses to continue a list after cursor c in a read at pos
// older than the page c came from: paging never goes back in time. A read
// that honoured the cursor's revision as its minimum (as the GraphQL
// handler's do) never meets this.
func notBefore(c cursor.Cursor, pos Position) error {
	if c.Revision <= pos.Revision {
		return nil
	}
	e := fault.Errorf(fault.Stale, "the cursor was issued at revision %d, after this read's revision %d; retry", c.Revision, pos.Revision)
	e.Details = map[string]any{"minRevision": c.Revision, "availableRevision": pos.Revision}
	return e
}
