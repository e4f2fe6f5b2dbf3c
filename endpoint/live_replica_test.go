package endpoint_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// frozenCopy is a PostgreSQL copy of an engine store as it was when it was
// taken: a replica whose replay stands still until refresh moves it. Two
// copies taken at different times are two replicas lagging by different
// amounts, which one streaming standby cannot give a test on demand.
type frozenCopy struct {
	dsn    string
	schema string
	tables []string
}

func schemaOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	must(t, err)
	s := u.Query().Get("search_path")
	if s == "" {
		t.Fatalf("no search_path in %s", dsn)
	}
	return s
}

// adminConn is a connection to the PostgreSQL server outside any test
// schema, closed when the test ends.
func adminConn(t *testing.T) (context.Context, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.PostgresURL())
	must(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	return ctx, conn
}

// copyStore copies every table of the store at dsn into a schema of its
// own, without triggers: nothing writes the copy but refresh.
func copyStore(t *testing.T, dsn string) *frozenCopy {
	t.Helper()
	ctx, conn := adminConn(t)
	from := schemaOf(t, dsn)
	c := &frozenCopy{dsn: storetest.DSN(t, store.Postgres)}
	c.schema = schemaOf(t, c.dsn)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`, from)
	must(t, err)
	c.tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	for _, tb := range c.tables {
		_, err := conn.Exec(ctx, `CREATE TABLE `+c.schema+`.`+tb+` (LIKE `+from+`.`+tb+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`)
		must(t, err)
	}
	c.refresh(t, dsn)
	return c
}

// refresh makes the copy what the store at dsn is now, in one transaction.
func (c *frozenCopy) refresh(t *testing.T, dsn string) {
	t.Helper()
	ctx, conn := adminConn(t)
	from := schemaOf(t, dsn)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	must(t, err)
	defer tx.Rollback(ctx)
	for _, tb := range c.tables {
		_, err := tx.Exec(ctx, `DELETE FROM `+c.schema+`.`+tb)
		must(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO `+c.schema+`.`+tb+` SELECT * FROM `+from+`.`+tb)
		must(t, err)
	}
	must(t, tx.Commit(ctx))
}

// TestSubscriptionsNeverGoBackInTimeAcrossReplicas serves subscriptions from
// two replicas that lag by different amounts, taken in turn, and a third
// that is a copy of another store: no event is ever read at an older
// revision than one already sent, the other store is never read, and a
// subscription's minimum revision holds for its first event.
func TestSubscriptionsNeverGoBackInTimeAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	db := storetest.OpenDSN(t, dsn, true)
	w := engine.NewWriter(db, nil)
	must(t, w.CreateRun(ctx, engine.NewRun{ID: "r1", FlowName: "live"}))
	behind := copyStore(t, dsn)
	must(t, w.Start(ctx, "r1", liveOwner))
	ahead := copyStore(t, dsn)
	otherDSN := storetest.DSN(t, store.Postgres)
	other := storetest.OpenDSN(t, otherDSN, true)
	must(t, engine.NewWriter(other, nil).CreateRun(ctx, engine.NewRun{ID: "r1", FlowName: "elsewhere"}))

	reader := snapshot.NewReader(storetest.OpenReader(t, dsn))
	replicas := []*store.DB{storetest.OpenReader(t, behind.dsn), storetest.OpenReader(t, ahead.dsn), storetest.OpenReader(t, otherDSN)}
	must(t, reader.UseReplicas(ctx, replicas, snapshot.ReplicaOptions{StaleWait: 100 * time.Millisecond, CheckInterval: 10 * time.Millisecond}))
	rctx, stopReplicas := context.WithCancel(ctx)
	t.Cleanup(stopReplicas)
	go reader.WatchReplicas(rctx)
	primary, err := reader.Position(ctx)
	must(t, err)

	watcher := live.New(reader, live.Options{Interval: 10 * time.Millisecond})
	wctx, stopWatcher := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = watcher.Run(wctx) }()
	t.Cleanup(func() { stopWatcher(); <-stopped })
	<-watcher.Ready()
	srv := httptest.NewServer(endpoint.NewHandler(reader, endpoint.Options{Live: watcher}))
	t.Cleanup(srv.Close)

	pos := subscribeSSE(t, srv.URL, `subscription { position { revision } }`, nil)
	run := subscribeSSE(t, srv.URL, runSubscription, map[string]any{"id": "r1"})
	// The first event of a subscription with a minimum is read where the
	// minimum is met: on the replica ahead.
	min := postSSE(t, srv.URL, map[string]any{"query": `subscription { position { revision } }`, "extensions": map[string]any{"minRevision": ahead.revision(t)}})
	if ev := next(t, min.events); ev.Extensions.Position == nil || ev.Extensions.Position.Revision < ahead.revision(t) {
		t.Fatalf("a subscription with minimum revision %d began with %+v", ahead.revision(t), ev)
	}
	// A minimum beyond the store ends the subscription with SOURCE_CHANGED.
	beyond := postSSE(t, srv.URL, map[string]any{"query": `subscription { position { revision } }`, "extensions": map[string]any{"minRevision": primary.Revision + 1000}})
	if ev := next(t, beyond.events); ev.code() != "SOURCE_CHANGED" {
		t.Fatalf("a subscription with a minimum beyond the store began with %+v, want SOURCE_CHANGED", ev)
	}
	waitClosed(t, beyond.done, "the SOURCE_CHANGED subscription's end")

	// The engine moves on; the replica ahead follows, then the one behind
	// jumps past it. Events arrive at growing revisions only.
	var lastPos, lastRun int64
	check := func(s *sseStream, last *int64, until int64) {
		t.Helper()
		nextUntil(t, s.events, last, func(ev event) bool {
			if ev.Extensions.Position.Source != primary.Source {
				t.Fatalf("an event from another store: %+v", ev)
			}
			return ev.Extensions.Position.Revision >= until
		})
	}
	check(pos, &lastPos, ahead.revision(t))
	check(run, &lastRun, ahead.revision(t))
	// Let the watcher take both replicas in turn many times: nothing moves,
	// so nothing more may come, least of all an older revision.
	time.Sleep(300 * time.Millisecond)
	drain := func(s *sseStream, last *int64) {
		t.Helper()
		for {
			select {
			case ev := <-s.events:
				if ev.Extensions.Position == nil || ev.Extensions.Position.Revision <= *last {
					t.Fatalf("an event at %+v after one at revision %d", ev.Extensions.Position, *last)
				}
				*last = ev.Extensions.Position.Revision
			default:
				return
			}
		}
	}
	drain(pos, &lastPos)
	drain(run, &lastRun)
	must(t, w.Complete(ctx, "r1", json.RawMessage(`{}`)))
	ahead.refresh(t, dsn)
	check(pos, &lastPos, ahead.revision(t))
	ev := func() event {
		var got event
		nextUntil(t, run.events, &lastRun, func(ev event) bool { got = ev; return ev.Extensions.Position.Revision >= ahead.revision(t) })
		return got
	}()
	if _, status, _, _ := ev.run(t); status != "COMPLETED" {
		t.Fatalf("after Complete: %+v", ev)
	}
	time.Sleep(300 * time.Millisecond)
	drain(pos, &lastPos)
	drain(run, &lastRun)

	// The replica of another store is never healthy, and says why.
	st := reader.Replicas()
	if len(st) != 3 || st[2].Healthy || !strings.Contains(st[2].Problem, "another store") || !st[0].Healthy || !st[1].Healthy {
		t.Fatalf("replica status %+v: want the first two healthy and the third a copy of another store", st)
	}
}

// revision is the copy's revision now.
func (c *frozenCopy) revision(t *testing.T) int64 {
	t.Helper()
	ctx, conn := adminConn(t)
	var rev int64
	must(t, conn.QueryRow(ctx, `SELECT revision FROM `+c.schema+`.flows_run_source`).Scan(&rev))
	return rev
}
