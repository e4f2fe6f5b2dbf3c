package snapshot

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// Reader reads snapshots of one engine store. It is safe for concurrent use.
type Reader struct {
	db *store.DB
	// replicas, when set, are where reads go (see UseReplicas).
	replicas *replicaSet
	// OnRead, when set, is called after each read transaction ends with how
	// long it was open; for metrics.
	OnRead func(open time.Duration, err error)

	sourceMu sync.Mutex
	source   string // the source of the first position read

	// selectRuns is the statement of every batch of runs, and
	// selectRevisions that of their revisions, made once;
	// selectRunsAndParents reads the runs' parents too (see RunsAndParents).
	selectRuns, selectRevisions, selectRunsAndParents string
	// cache, when set, keeps decoded runs by revision (see SetRunCache).
	// byRevision says reads ask it by their runs' revisions (SQLite, see
	// revisionCache); otherwise it answers only the runs the revision
	// watcher has seen unchanged (see ChangesSeen).
	cache      *runCache
	byRevision bool
	// pageStmts are the statements of the batches of pages read.
	pageStmts pageStatements
	// limit bounds each statement whose cost the store's data decides (a
	// list or a count), and lane how many of them run at once (see
	// SetStatementLimit).
	limit time.Duration
	lane  chan struct{}
	// runs is how many runs the store held when last counted (see
	// RefreshRunEstimate).
	runs atomic.Int64
}

// SetStatementLimit bounds every list and count statement to limit (0: no
// bound but the operation's own deadline), and lets at most lane of them
// run at once, so that expensive reads never hold every connection and a
// read waiting for the lane gives up, with TIMEOUT, after limit too
// (docs/contract.md#cost-model). Call it before the first read.
func (r *Reader) SetStatementLimit(limit time.Duration, lane int) {
	r.limit, r.lane = limit, nil
	if lane > 0 {
		r.lane = make(chan struct{}, lane)
	}
}

// DefaultLane is how many expensive statements a reader of a store with n
// read connections runs at once: a quarter of them, at least one.
func DefaultLane(n int) int { return max(1, n/4) }

// NewReader returns a Reader of db, which keeps decoded runs in a cache of
// DefaultRunCacheBytes (see SetRunCache).
func NewReader(db *store.DB) *Reader {
	d := db.Dialect()
	r := &Reader{db: db, selectRuns: selectRuns(d), selectRevisions: selectRevisions(d),
		selectRunsAndParents: selectRunsAndParents(d), byRevision: d.InProcess()}
	r.cache = newRunCache(DefaultRunCacheBytes)
	return r
}

// SetRunCache sets how many bytes of decoded runs the reader keeps, to
// read again by their revisions alone, in a statement of their own; 0
// keeps none. It is how a reader of SQLite keeps runs by default, where a
// run's row costs several times its change row. Call it before the first
// read.
func (r *Reader) SetRunCache(bytes int) {
	r.setCache(bytes, true)
}

// SetWatchedRunCache sets how many bytes of decoded runs the reader keeps
// to answer only the runs the revision watcher has seen unchanged (see
// ChangesSeen), without a statement; runs it cannot answer so are read
// whole. It is how a reader of PostgreSQL keeps runs by default, where a
// statement of revisions would be a round trip of its own. 0 keeps none.
// Call it before the first read.
func (r *Reader) SetWatchedRunCache(bytes int) {
	r.setCache(bytes, false)
}

func (r *Reader) setCache(bytes int, byRevision bool) {
	r.cache, r.byRevision = nil, byRevision
	if bytes > 0 {
		r.cache = newRunCache(bytes)
	}
}

// revisionCache returns the run cache when reads ask it by their runs'
// revisions (see SetRunCache).
func (r *Reader) revisionCache() *runCache {
	if !r.byRevision {
		return nil
	}
	return r.cache
}

// ChangesSeen tells the reader's run cache of every change the revision
// watcher read from source after revision from up to revision to (each
// run's latest, as a feed that has no more gives them): the runs it holds
// that none of those changed are, up to to, the latest versions of their
// ids, and a read at to or earlier takes them without a statement. Only
// the reader's one watcher may call it, and with every change: from the
// revision it last told of (or ChangesUnknown did), up to the next.
func (r *Reader) ChangesSeen(source string, from, to int64, changes []Change) {
	if c := r.cache; c != nil {
		c.changesSeen(source, from, to, changes)
	}
}

// ChangesUnknown tells the reader's run cache that the watcher did not
// read the changes of source's runs up to revision at (its first look, a
// store restored to an earlier revision, a burst of more changes than it
// reads at once), but will tell of every change after at.
func (r *Reader) ChangesUnknown(source string, at int64) {
	if c := r.cache; c != nil {
		c.changesUnknown(source, at)
	}
}

// DB returns the store the reader reads.
func (r *Reader) DB() *store.DB { return r.db }

type readKey struct{}

// Read is one read transaction shared by every read made with the context
// Begin returned. It is safe for concurrent use: statements are serialized,
// since one connection runs one statement at a time.
type Read struct {
	r   *Reader
	ctx context.Context

	mu         sync.Mutex
	tx         store.Tx
	opened     time.Time
	pos        Position
	err        error
	ended      bool
	statements int
	// min is the least revision the read may be at (see AtLeast).
	min int64
	// alone asks that the first statement run on its own (see Alone);
	// ranAlone says it did, and that no other may follow.
	alone, ranAlone bool
	// seen says the read's position is one another read saw (see
	// PositionSeen): it ran no statement, and none may follow.
	seen bool
	// endNext asks that the next read be the last (see EndWithNext);
	// endedWith says one was, and that no statement may follow.
	endNext, endedWith bool
	// broken is the limited statement that aborted the transaction: every
	// later read of the operation fails with it.
	broken error
}

// Alone says that the operation needs one statement: the first then runs
// on its own, outside a transaction, with the position read in it
// (store.DB.ReadAlone): one statement is one snapshot in both dialects,
// and it spares BEGIN and ROLLBACK, on PostgreSQL a round trip. A second
// statement is refused (Internal)
// rather than read at another snapshot, so the caller must be sure. It
// has no effect once something was read, nor on a reader with replicas,
// nor for a batch the run cache answers (see SetRunCache), whose changed
// rows may be a second statement.
func (rd *Read) Alone() {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.tx == nil && !rd.ranAlone && rd.r.replicas == nil {
		rd.alone = true
	}
}

// EndWithNext says that the operation's next read (one call of a Reader
// method with the read's context) is its last. On PostgreSQL, when the
// transaction is open already, the ROLLBACK that ends it is then sent
// behind that read's statement (store.LastQuerier), which spares End a
// round trip; a second statement in that read is refused. In both dialects
// a read after it is refused (Internal) rather than read at another
// snapshot, so the caller must be sure; Position still answers.
func (rd *Read) EndWithNext() {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if !rd.ranAlone && !rd.endedWith {
		rd.endNext = true
	}
}

// EndedWithLast reports whether the read's last statement ended it (see
// EndWithNext).
func (rd *Read) EndedWithLast() bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.endedWith
}

// Begin returns a context whose reads all happen in one transaction, and
// that transaction. Nothing is opened until the first read, with that read's
// context (which carries the operation's deadline); the caller must call End
// when the operation is complete, on every path. ctx is kept for End's
// rollback, which runs even after ctx is done.
func (r *Reader) Begin(ctx context.Context) (context.Context, *Read) {
	rd := &Read{r: r, ctx: ctx}
	return context.WithValue(ctx, readKey{}, rd), rd
}

// End rolls the transaction back and releases its connection. It is safe to
// call more than once and when nothing was read.
func (rd *Read) End() {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.ended {
		return
	}
	rd.ended = true
	if rd.ranAlone && !rd.seen && rd.opened != (time.Time{}) && rd.r.OnRead != nil {
		rd.r.OnRead(time.Since(rd.opened), nil)
	}
	if rd.tx == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rd.ctx), 5*time.Second)
	defer cancel()
	err := rd.tx.Rollback(ctx)
	rd.tx = nil
	if rd.r.OnRead != nil {
		rd.r.OnRead(time.Since(rd.opened), err)
	}
}

// Restart ends the read, as End does, and makes it new: the next read
// through it opens a transaction of its own, at a position at or after the
// least revision asked for (AtLeast). A subscription whose event turned
// out to say nothing new reads the next one through it.
func (rd *Read) Restart() {
	rd.End()
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.tx, rd.opened, rd.pos, rd.err, rd.ended, rd.statements = nil, time.Time{}, Position{}, nil, false, 0
	rd.ranAlone, rd.seen, rd.endNext, rd.endedWith, rd.broken = false, false, false, false, nil
}

// RanAlone reports whether the read's one statement ran alone, outside a
// transaction (see Alone).
func (rd *Read) RanAlone() bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.ranAlone
}

// Position returns the position the transaction reads at, and false when
// nothing was read (or the position could not be read).
func (rd *Read) Position() (Position, bool) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.pos, rd.opened != (time.Time{}) && rd.err == nil
}

// Statements returns how many statements the transaction has run, the
// position read included.
func (rd *Read) Statements() int {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.statements
}

const selectPosition = `SELECT source, revision FROM flows_run_source WHERE singleton = 1`

// do runs fn in the transaction, which opens (and reads the position) with
// the first statement fn runs, or after fn when it ran none: every read
// reads the position. Calls are serialized.
func (rd *Read) do(ctx context.Context, fn func(q *querier) error) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.ended {
		return fault.Errorf(fault.Timeout, "the operation's read has already ended")
	}
	if rd.err != nil {
		return rd.err
	}
	if rd.broken != nil {
		return rd.broken
	}
	if err := ctx.Err(); err != nil {
		return fault.Wrap(fault.Timeout, err, "the operation was cancelled or ran out of time")
	}
	q := &querier{rd: rd, ctx: ctx, last: rd.endNext}
	if q.last {
		rd.endNext = false
		defer func() { rd.endedWith = true }()
	}
	if err := fn(q); err != nil {
		return err
	}
	if rd.tx == nil && !rd.ranAlone {
		_, err := q.position()
		return err
	}
	return nil
}

// open begins the transaction with the context of the first read, which
// carries the operation's deadline, and reads the position; when first is
// set it also runs that statement, pipelined with the rest (see
// store.DB.BeginReadWith), and returns its rows. A failure to open is kept:
// every later read of the operation returns it.
func (rd *Read) open(ctx context.Context, first string, args []any) (store.Rows, error) {
	rows, err := rd.begin(ctx, first, args)
	if err != nil {
		rd.err = err
	}
	return rows, err
}

func (rd *Read) begin(ctx context.Context, first string, args []any) (store.Rows, error) {
	tx, pos, rows, err := rd.r.beginWith(ctx, rd.min, first, args)
	if err != nil {
		switch {
		case err == store.ErrNoRows:
			return nil, fault.Errorf(fault.PersistenceFailed, "the store has no position row: it is not an engine store")
		}
		return nil, persistenceUnlessCoded(err, "reading the position")
	}
	rd.tx, rd.opened, rd.pos = tx, time.Now(), pos
	rd.statements++
	if first != "" {
		rd.statements++
	}
	if err := rd.r.sameSource(pos.Source); err != nil {
		if rows != nil {
			rows.Close()
		}
		return nil, err
	}
	return rows, nil
}

// openAlone runs first on its own, with the position read in it (see
// Alone). The position is checked as begin checks it when the first row
// is scanned, before the caller sees that row.
func (rd *Read) openAlone(ctx context.Context, first string, args []any) (store.Rows, error) {
	rd.ranAlone = true
	a := &aloneRows{rd: rd}
	rows, err := rd.r.db.ReadAlone(ctx, selectPosition, []any{&a.src, &a.rev}, first, args...)
	if err != nil {
		rd.err = persistenceUnlessCoded(err, "reading")
		return nil, rd.err
	}
	a.Rows = rows
	return a, nil
}

// aloneRows are the rows of a statement run alone: the first one scanned
// places the read at the position it carries.
type aloneRows struct {
	store.Rows
	rd     *Read
	src    string
	rev    int64
	placed bool
}

func (a *aloneRows) Scan(dest ...any) error {
	if err := a.Rows.Scan(dest...); err != nil {
		return err
	}
	if a.placed {
		return nil
	}
	a.placed = true
	pos, err := checkPosition(a.src, a.rev)
	if err == nil && pos.Revision < a.rd.min {
		err = beyondStore(a.rd.min, pos.Revision)
	}
	if err == nil {
		err = a.rd.r.sameSource(pos.Source)
	}
	if err != nil {
		a.rd.err = err
		return err
	}
	// The position and the statement: what begin counts for a first
	// statement pipelined with it.
	a.rd.pos, a.rd.opened = pos, time.Now()
	a.rd.statements += 2
	return nil
}

// Err is the statement's error; one before the position was read is the
// read's, for every later read of the operation.
func (a *aloneRows) Err() error {
	err := a.Rows.Err()
	if err == nil || a.placed {
		return err
	}
	if errors.Is(err, store.ErrNoRows) {
		err = fault.Errorf(fault.PersistenceFailed, "the store answered no row: it has no position row, or is not an engine store")
	} else {
		err = persistenceUnlessCoded(err, "reading")
	}
	if a.rd.err == nil {
		a.rd.err = err
	}
	return err
}

// beginWith opens a read at a position at or after min and, when first is
// set, runs that statement in it. Without replicas the primary is read with
// BEGIN, the position and first pipelined in one round trip (see
// store.DB.BeginReadWith); with replicas the one chosen is opened first and
// first runs after.
func (r *Reader) beginWith(ctx context.Context, min int64, first string, args []any) (store.Tx, Position, store.Rows, error) {
	if first != "" && r.replicas == nil {
		var src string
		var rev int64
		tx, rows, err := r.db.BeginReadWith(ctx, selectPosition, []any{&src, &rev}, first, args...)
		if err != nil {
			return nil, Position{}, nil, err
		}
		pos, err := checkPosition(src, rev)
		if err == nil && pos.Revision < min {
			err = beyondStore(min, pos.Revision)
		}
		if err != nil {
			rows.Close()
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return nil, Position{}, nil, err
		}
		return tx, pos, rows, nil
	}
	tx, pos, err := r.begin(ctx, min)
	if err != nil || first == "" {
		return tx, pos, nil, err
	}
	rows, err := tx.Query(ctx, first, args...)
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, Position{}, nil, err
	}
	return tx, pos, rows, nil
}

// readPosition begins a read transaction on db and reads its position, the
// first statement of every read. On failure nothing is left open.
func readPosition(ctx context.Context, db *store.DB) (store.Tx, Position, error) {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return nil, Position{}, err
	}
	pos, err := scanPosition(ctx, tx)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
		return nil, Position{}, err
	}
	return tx, pos, nil
}

func scanPosition(ctx context.Context, tx store.Tx) (Position, error) {
	var src string
	var rev int64
	if err := tx.QueryRow(ctx, selectPosition).Scan(&src, &rev); err != nil {
		if err == store.ErrNoRows {
			return Position{}, fault.Errorf(fault.PersistenceFailed, "the store has no position row: it is not an engine store")
		}
		return Position{}, persistence(err, "reading the position")
	}
	return checkPosition(src, rev)
}

// checkPosition decodes the position row.
func checkPosition(src string, rev int64) (Position, error) {
	if len(src) != 32 || !isLowerHex(src) || rev < 0 || rev > vocab.MaxSafe {
		return Position{}, fault.Errorf(fault.DecodeFailed, "the store's position row is malformed")
	}
	return Position{Source: src, Revision: rev}, nil
}

// sameSource refuses a position from another store than the first one this
// reader read: a store replaced under a running server must not be answered
// from, nor mixed with the one it replaced.
// Source returns the store's source as first read, or "" before any read.
func (r *Reader) Source() string {
	r.sourceMu.Lock()
	defer r.sourceMu.Unlock()
	return r.source
}

func (r *Reader) sameSource(src string) error {
	r.sourceMu.Lock()
	defer r.sourceMu.Unlock()
	if r.source == "" {
		r.source = src
		return nil
	}
	if src != r.source {
		return fault.Errorf(fault.PersistenceFailed, "the store was replaced: its source is not the one this server started with")
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func persistence(err error, doing string) error {
	return fault.Wrap(fault.PersistenceFailed, err, "%s failed", doing)
}

// persistenceUnlessCoded is persistence for an error without a code of its
// own (a driver's), and err itself for one with a code.
func persistenceUnlessCoded(err error, doing string) error {
	if fault.CodeOf(err) != fault.Internal {
		return err
	}
	return persistence(err, doing)
}

// errSecondStatement refuses a statement after one run alone (see Alone),
// or after the one that ended the read (see EndWithNext).
var errSecondStatement = fault.Errorf(fault.Internal, "a read of one statement needed another")

// querier runs statements in a Read's transaction, counting them.
type querier struct {
	rd  *Read
	ctx context.Context
	// last says the read is the operation's last (see EndWithNext), and
	// piped that its statement went with the transaction's end.
	last, piped bool
}

// pos is the read's position; only once the transaction is open (after a
// statement, or position).
func (q *querier) pos() Position { return q.rd.pos }

// placed reports whether the read's position is known: not before the
// statement of a read run alone has given it.
func (q *querier) placed() bool { return q.rd.opened != (time.Time{}) && q.rd.err == nil }

// position opens the transaction if it is not open yet, and returns its
// position.
func (q *querier) position() (Position, error) {
	if q.rd.ranAlone {
		if q.rd.err != nil {
			return Position{}, q.rd.err
		}
		if q.rd.opened == (time.Time{}) {
			return Position{}, fault.Errorf(fault.Internal, "the position was asked for before the read's one statement answered")
		}
		return q.rd.pos, nil
	}
	if q.rd.tx == nil && q.rd.alone {
		return q.positionAlone()
	}
	if q.rd.tx == nil {
		if _, err := q.rd.open(q.ctx, "", nil); err != nil {
			return Position{}, err
		}
	}
	return q.rd.pos, nil
}

// selectNothing is the statement a read run alone carries when it needs
// the position only.
const selectNothing = `SELECT 1 AS alone_nothing`

// positionAlone reads the position alone (see Alone): one statement, no
// BEGIN or ROLLBACK, for a read that needs nothing else.
func (q *querier) positionAlone() (Position, error) {
	rows, err := q.rd.openAlone(q.ctx, selectNothing, nil)
	if err != nil {
		return Position{}, err
	}
	defer rows.Close()
	if rows.Next() {
		var nothing int64
		if err := rows.Scan(&nothing); err != nil {
			return Position{}, persistenceUnlessCoded(err, "reading the position")
		}
		// The scan counted the position and a statement beside it; the
		// position was the whole statement.
		q.rd.statements--
	}
	if err := rows.Err(); err != nil {
		return Position{}, persistenceUnlessCoded(err, "reading the position")
	}
	if !q.placed() {
		return Position{}, fault.Errorf(fault.PersistenceFailed, "the store answered no position row: it is not an engine store")
	}
	return q.rd.pos, nil
}

// query runs a statement; the transaction's first opens it, in one round
// trip with its BEGIN and the position on PostgreSQL.
func (q *querier) query(sql string, args ...any) (store.Rows, error) {
	switch {
	case q.rd.ranAlone || q.rd.endedWith || q.piped:
		if q.rd.err != nil {
			return nil, q.rd.err
		}
		return nil, errSecondStatement
	case q.rd.tx == nil && q.rd.alone:
		return q.rd.openAlone(q.ctx, sql, args)
	case q.rd.tx == nil:
		return q.rd.open(q.ctx, sql, args)
	}
	q.rd.statements++
	if q.last {
		if last, ok := q.rd.tx.(store.LastQuerier); ok {
			q.piped = true
			return last.QueryLast(q.ctx, sql, args...)
		}
	}
	return q.rd.tx.Query(q.ctx, sql, args...)
}

// limited runs a statement whose cost the store's data decides (a list, a
// count) under the reader's statement limit, in its lane (see
// SetStatementLimit). A read run alone, or ending with its last statement,
// runs it as query does.
func (q *querier) limited(sql string, args ...any) (store.Rows, error) {
	r := q.rd.r
	if r.limit <= 0 || q.rd.ranAlone || q.rd.endedWith || q.piped || (q.rd.tx == nil && q.rd.alone) {
		return q.query(sql, args...)
	}
	release := func() {}
	if r.lane != nil {
		if err := r.enterLane(q.ctx); err != nil {
			return nil, err
		}
		release = sync.OnceFunc(func() { <-r.lane })
	}
	if q.rd.tx == nil {
		if _, err := q.position(); err != nil {
			release()
			return nil, err
		}
	}
	lq, ok := q.rd.tx.(store.LimitedQuerier)
	if !ok {
		release()
		return q.query(sql, args...)
	}
	q.rd.statements++
	rows, err := lq.QueryLimited(q.ctx, r.limit, sql, args...)
	if err != nil {
		release()
		q.rd.brokenBy(err)
		return nil, err
	}
	return limitedRows{Rows: rows, rd: q.rd, release: release}, nil
}

// enterLane takes a place in the lane of expensive statements, waiting at
// most the statement limit for one; a free place is taken at once.
func (r *Reader) enterLane(ctx context.Context) error {
	select {
	case r.lane <- struct{}{}:
		return nil
	default:
	}
	wait := time.NewTimer(r.limit)
	defer wait.Stop()
	select {
	case r.lane <- struct{}{}:
		return nil
	case <-wait.C:
		return fault.Errorf(fault.Timeout, "other expensive reads kept this one waiting longer than the statement limit of %s; retry, or narrow the filter", r.limit)
	case <-ctx.Done():
		return fault.Wrap(fault.Timeout, ctx.Err(), "the operation ran out of time waiting to read")
	}
}

// brokenBy keeps err when the limited statement it ended aborted the
// transaction. rd.mu is held.
func (rd *Read) brokenBy(err error) {
	if store.TransactionAborted(err) {
		rd.broken = err
	}
}

// limitedRows hold their place in the lane until closed.
type limitedRows struct {
	store.Rows
	rd      *Read
	release func()
}

func (l limitedRows) Close() {
	l.Rows.Close()
	l.release()
}

func (l limitedRows) Err() error {
	err := l.Rows.Err()
	l.rd.brokenBy(err)
	return err
}

// each runs one statement and, for every row, scans it into dest and calls
// row; doing names the read in errors ("reading runs"). It is the one loop
// of query, scan and check that every read uses.
func (q *querier) each(sql string, args []any, dest []any, doing string, row func() error) error {
	return q.eachOf(q.query, sql, args, dest, doing, row)
}

// eachOf is each with the statement run by run (query, or limited).
func (q *querier) eachOf(run func(string, ...any) (store.Rows, error), sql string, args []any, dest []any, doing string, row func() error) error {
	rows, err := run(sql, args...)
	if err != nil {
		if errors.Is(err, errSecondStatement) {
			return err
		}
		// The statement that opens the read fails with the open's own
		// error when it has a code (a position beyond the store, a
		// timeout).
		return persistenceUnlessCoded(err, doing)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			// A statement run alone fails its first scan with the
			// position's own error.
			return persistenceUnlessCoded(err, doing)
		}
		if err := row(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return persistenceUnlessCoded(err, doing)
	}
	return nil
}

func (q *querier) dialect() store.Dialect { return q.rd.r.db.Dialect() }

// with runs fn in the read carried by ctx, or in a read of its own.
func (r *Reader) with(ctx context.Context, fn func(q *querier) error) error {
	if rd, ok := ctx.Value(readKey{}).(*Read); ok && rd.r == r {
		return rd.do(ctx, fn)
	}
	ctx, rd := r.Begin(ctx)
	defer rd.End()
	return rd.do(ctx, fn)
}

// Position returns the position of the read carried by ctx (opening it if
// needed).
func (r *Reader) Position(ctx context.Context) (Position, error) {
	return readWith(ctx, r, func(q *querier) (Position, error) { return q.position() })
}

// PositionAlone is Position for an operation that reads nothing else,
// such as a position subscription's event: a read carried by ctx and not
// opened yet reads it alone (see Read.Alone), one statement without BEGIN
// and ROLLBACK.
func (r *Reader) PositionAlone(ctx context.Context) (Position, error) {
	if rd, ok := ctx.Value(readKey{}).(*Read); ok && rd.r == r {
		rd.Alone()
	}
	return r.Position(ctx)
}

// PositionSeen is PositionAlone for an operation whose position another
// read of the store has just seen, such as a position subscription's event
// after the live watcher's tick told of seen: when the read ctx carries is
// not opened yet and seen is at or after its least revision (AtLeast) and
// from this reader's store, seen is the read's position and nothing is
// read; a statement after it is refused as after a read alone. Otherwise it
// reads the position alone. One statement read the position either way;
// a thousand subscribers told of one revision do not read it a thousand
// times more.
func (r *Reader) PositionSeen(ctx context.Context, seen Position) (Position, error) {
	if rd, ok := ctx.Value(readKey{}).(*Read); ok && rd.r == r && rd.takeSeen(seen) {
		return seen, nil
	}
	return r.PositionAlone(ctx)
}

// takeSeen makes seen the position of a read not opened yet (see
// PositionSeen), and says whether it could.
func (rd *Read) takeSeen(seen Position) bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.tx != nil || rd.ranAlone || rd.ended || rd.err != nil || rd.broken != nil || seen.Revision < rd.min || seen.Source == "" {
		return false
	}
	if rd.r.sameSource(seen.Source) != nil {
		return false
	}
	rd.ranAlone, rd.seen, rd.opened, rd.pos = true, true, time.Now(), seen
	return true
}

// readWith is r.with for a read that returns a value: fn's, read in the
// operation's snapshot.
func readWith[T any](ctx context.Context, r *Reader, fn func(q *querier) (T, error)) (T, error) {
	var out T
	err := r.with(ctx, func(q *querier) error {
		var err error
		out, err = fn(q)
		return err
	})
	return out, err
}
