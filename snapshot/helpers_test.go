package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// fixture is a fresh engine store with the engine's writer on it and a
// Reader over a read-only handle, as flowsnap serve reads.
type fixture struct {
	d   store.Dialect
	dsn string
	db  *store.DB // opened for writing
	ro  *store.DB // opened read-only; what r reads
	r   *snapshot.Reader
	w   *engine.Writer
}

func newFixture(t testing.TB, d store.Dialect) *fixture {
	t.Helper()
	dsn := storetest.DSN(t, d)
	db := storetest.OpenDSN(t, dsn, true)
	ro := storetest.OpenReader(t, dsn)
	return &fixture{d: d, dsn: dsn, db: db, ro: ro, r: snapshot.NewReader(ro), w: engine.NewWriter(db, nil)}
}

var worker = vocab.Owner{HostID: "host-1", PID: 4242, Nonce: "nonce-1"}

// do runs engine actions in one transaction.
func (f *fixture) do(t testing.TB, fn func(tx *engine.Tx) error) {
	t.Helper()
	if err := f.w.Do(context.Background(), fn); err != nil {
		t.Fatalf("engine write: %v", err)
	}
}

// create creates runs in one transaction.
func (f *fixture) create(t testing.TB, runs ...engine.NewRun) {
	t.Helper()
	f.do(t, func(tx *engine.Tx) error {
		for _, r := range runs {
			if err := tx.CreateRun(context.Background(), r); err != nil {
				return err
			}
		}
		return nil
	})
}

// change returns the change row of id as the store holds it now.
func (f *fixture) change(t testing.TB, id string) (revision, deleted int64) {
	t.Helper()
	ctx := context.Background()
	tx, err := f.db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := tx.QueryRow(ctx, `SELECT revision, deleted FROM flows_run_changes WHERE run_id = $1`, id).Scan(&revision, &deleted); err != nil {
		t.Fatalf("reading the change row of %q: %v", id, err)
	}
	return revision, deleted
}

// storePosition reads flows_run_source directly.
func (f *fixture) storePosition(t testing.TB) snapshot.Position {
	t.Helper()
	ctx := context.Background()
	tx, err := f.db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var p snapshot.Position
	if err := tx.QueryRow(ctx, `SELECT source, revision FROM flows_run_source`).Scan(&p.Source, &p.Revision); err != nil {
		t.Fatal(err)
	}
	return p
}

// runs reads ids in a read of their own.
func (f *fixture) runs(t testing.TB, ids ...string) []snapshot.Result[snapshot.Snapshot] {
	t.Helper()
	res, err := f.r.Runs(context.Background(), ids)
	if err != nil {
		t.Fatalf("Runs(%d ids): %v", len(ids), err)
	}
	if len(res) != len(ids) {
		t.Fatalf("Runs(%d ids) answered %d results", len(ids), len(res))
	}
	return res
}

// observed reads id and fails unless it is an observed run.
func (f *fixture) observed(t testing.TB, id string) *snapshot.Run {
	t.Helper()
	return mustRun(t, f.runs(t, id)[0])
}

func mustRun(t testing.TB, res snapshot.Result[snapshot.Snapshot]) *snapshot.Run {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("want an observed run, got error %v", res.Err)
	}
	run, ok := res.Value.(*snapshot.Run)
	if !ok {
		t.Fatalf("want an observed run, got %#v", res.Value)
	}
	return run
}

func mustMissing(t testing.TB, res snapshot.Result[snapshot.Snapshot]) *snapshot.Missing {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("want a missing run, got error %v", res.Err)
	}
	m, ok := res.Value.(*snapshot.Missing)
	if !ok {
		t.Fatalf("want a missing run, got %#v", res.Value)
	}
	return m
}

// wantCode fails unless err is a *fault.Error with code.
func wantCode(t testing.TB, err error, code fault.Code) *fault.Error {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("want a %s error, got %v", code, err)
	}
	if fe.Code != code {
		t.Fatalf("want a %s error, got %s: %v", code, fe.Code, err)
	}
	return fe
}

// pgConnect connects to the PostgreSQL server of the tests, outside any
// store's pool.
func pgConnect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, storetest.PostgresURL())
}

func ptr[T any](v T) *T { return &v }

// children reads one page of anchor's children in a read of its own.
func (f *fixture) children(t testing.TB, anchor string, first int, after *string) *snapshot.Page {
	t.Helper()
	req := snapshot.PageRequest{Anchor: anchor, After: after}
	if first != 0 {
		req.First = &first
	}
	p, err := f.r.Children(context.Background(), req)
	if err != nil {
		t.Fatalf("children of %q: %v", anchor, err)
	}
	return p
}

// rounds reads one page of the rounds of anchor's lineage in a read of its
// own.
func (f *fixture) rounds(t testing.TB, anchor, lineage string, first int, after *string) *snapshot.Page {
	t.Helper()
	req := snapshot.PageRequest{Anchor: anchor, Lineage: lineage, After: after}
	if first != 0 {
		req.First = &first
	}
	p, err := f.r.Rounds(context.Background(), req)
	if err != nil {
		t.Fatalf("rounds of %q: %v", anchor, err)
	}
	return p
}

// walk pages from the start to the end with pages of size first, each page
// in a read of its own, and returns every edge in order.
func walk(t testing.TB, first int, page func(after *string) *snapshot.Page) []snapshot.Edge {
	t.Helper()
	var all []snapshot.Edge
	var after *string
	for n := 0; ; n++ {
		if n > 100000 {
			t.Fatalf("paging does not end")
		}
		p := page(after)
		if len(p.Edges) > first {
			t.Fatalf("page of %d edges for first = %d", len(p.Edges), first)
		}
		all = append(all, p.Edges...)
		if len(p.Edges) > 0 && (p.PageInfo.EndCursor == nil || *p.PageInfo.EndCursor != p.Edges[len(p.Edges)-1].Cursor) {
			t.Fatalf("endCursor is not the cursor of the page's last edge")
		}
		if !p.PageInfo.HasNextPage {
			return all
		}
		if p.PageInfo.EndCursor == nil {
			t.Fatalf("a page with a next page has no endCursor")
		}
		after = p.PageInfo.EndCursor
	}
}

func edgeIDs(edges []snapshot.Edge) []string {
	ids := make([]string, len(edges))
	for i, e := range edges {
		ids[i] = e.RunID
	}
	return ids
}

// childrenCursor is the cursor a children page of anchor in the store source
// would end with at (seq, child).
func childrenCursor(source, anchor string, seq int64, child string) string {
	return cursor.Encode(cursor.Cursor{Source: source, Anchor: anchor, Kind: cursor.Children, Ordinal: seq, Last: child})
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after %v", what, state, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noOpenReads fails unless every read connection of db is back in its pool
// (polling briefly, since a connection returns after its rollback) and, on
// PostgreSQL, no session of db's pool is idle in a transaction.
func noOpenReads(t testing.TB, db *store.DB) {
	t.Helper()
	if db.Dialect() == store.SQLite {
		eventually(t, 5*time.Second, "SQLite read connections in use", func() (bool, string) {
			n := db.SQLReader().Stats().InUse
			return n == 0, fmt.Sprintf("%d in use", n)
		})
		return
	}
	eventually(t, 5*time.Second, "PostgreSQL connections acquired", func() (bool, string) {
		n := db.Pool().Stat().AcquiredConns()
		return n == 0, fmt.Sprintf("%d acquired", n)
	})
	pids := poolPIDs(t, db)
	eventually(t, 5*time.Second, "PostgreSQL sessions idle in a transaction", func() (bool, string) {
		var n int64
		ctx := context.Background()
		conn, err := pgConnect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE pid = ANY($1) AND state LIKE 'idle in transaction%'`, pids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0, fmt.Sprintf("%d of the pool's %d sessions", n, len(pids))
	})
}

// poolPIDs returns the backend pids of every connection of db's pool,
// acquiring the idle ones one by one.
func poolPIDs(t testing.TB, db *store.DB) []int64 {
	t.Helper()
	var pids []int64
	for _, c := range db.Pool().AcquireAllIdle(context.Background()) {
		pids = append(pids, int64(c.Conn().PgConn().PID()))
		c.Release()
	}
	return pids
}

// containsAny reports whether s contains any of subs, and which.
func containsAny(s string, subs ...string) (string, bool) {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return sub, true
		}
	}
	return "", false
}
