package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// BenchmarkListRunsPostgres reads a listRuns page of 100, newest first,
// for every filter of RunFilter, at depth 0 and at depth D (after the D
// newest runs the filter selects, D = 10^6 or, on a smaller store, all but
// its oldest 1,000 runs), on PostgreSQL in the server's own execution mode
// (a pool opened as flowsnap serve opens it: statements prepared once and
// planned generically, every list statement under serve's default
// statement limit), each in a read of its own: .../flowsnap through
// Reader.ListRuns, .../rawSQL a hand-written statement reading the same
// rows and columns in the same kind of transaction, .../rawSQLEdges that
// statement also reading each run's earliest spawn edge as flowsnap does,
// and .../paired the three in turns in one loop, reporting the median of
// each and flowsnap's ratios to them (x-rawSQL, x-rawSQLEdges): on a busy
// machine, the figures to compare.
//
// FLOWSNAP_BENCH_PG_STORE names a PostgreSQL store to read (filled up by
// copies of its runs to FLOWSNAP_BENCH_LIST_RUNS runs when it has fewer,
// then vacuumed and analysed; build it once and reuse it); without it the
// benchmark seeds a schema of its own.
func BenchmarkListRunsPostgres(b *testing.B) {
	ctx := context.Background()
	runs := benchListRuns(b)
	dsn := os.Getenv("FLOWSNAP_BENCH_PG_STORE")
	var db, ro *store.DB
	if dsn != "" {
		db = storetest.OpenDSN(b, dsn, true)
		ro = storetest.OpenReader(b, dsn)
	} else {
		f := newFixture(b, store.Postgres)
		if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: min(runs, opsBenchSeed), Seed: 1}); err != nil {
			b.Fatal(err)
		}
		db, ro = f.db, f.ro
	}
	var have int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM flows_runs`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have < runs {
		fillByCopies(b, db, store.Postgres, runs)
		if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
			b.Fatal(err)
		}
	}
	r := snapshot.NewReader(ro)
	// As flowsnap serve reads: every list statement under its limit
	// (--statement-timeout's default), in the lane of expensive reads.
	r.SetStatementLimit(2*time.Second, snapshot.DefaultLane(ro.MaxReaders()))
	one := func(sql string, dest ...any) {
		b.Helper()
		if err := ro.Pool().QueryRow(ctx, sql).Scan(dest...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	mostOf := func(col string) string {
		var v string
		var n int64
		one(`SELECT `+col+`, count(*) FROM flows_runs WHERE `+col+` IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, &v, &n)
		return v
	}
	var live, newest int64
	one(`SELECT count(*), max(created_at_ms) FROM flows_runs`, &live, &newest)
	depth := min(1_000_000, live-1000)
	flow := mostOf(`(state_json::json ->> 'flowName')`)
	parent, execParent, lineage := mostOf("parent_run_id"), mostOf("execution_parent_id"), mostOf("lineage_id")
	var finished, beat int64
	one(`SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY finished_at_ms) FROM flows_runs`, &finished)
	one(`SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY heartbeat_at_ms) FROM flows_runs`, &beat)
	after, fin, stale := snapshot.Millis(newest-30*86_400_000), snapshot.Millis(finished), snapshot.Millis(beat)
	yes := true
	// Each filter, and its terms as one writes them by hand.
	filters := []struct {
		name   string
		filter snapshot.RunFilter
		terms  string
	}{
		{"none", snapshot.RunFilter{}, "TRUE"},
		{"status", snapshot.RunFilter{Status: []vocab.Status{vocab.StatusFailed}}, "status = 'failed'"},
		{"flowName", snapshot.RunFilter{FlowName: &flow}, "(state_json::json ->> 'flowName') = " + quoteLit(flow)},
		{"statusAndFlowName", snapshot.RunFilter{FlowName: &flow, Status: []vocab.Status{vocab.StatusCompleted}},
			"(state_json::json ->> 'flowName') = " + quoteLit(flow) + " AND status = 'completed'"},
		{"parentRunId", snapshot.RunFilter{ParentRunID: &parent}, "parent_run_id = " + quoteLit(parent)},
		{"executionParentId", snapshot.RunFilter{ExecutionParentID: &execParent}, "execution_parent_id = " + quoteLit(execParent)},
		{"lineageId", snapshot.RunFilter{LineageID: &lineage}, "COALESCE(lineage_id, run_id) = " + quoteLit(lineage)},
		{"waitingReason", snapshot.RunFilter{WaitingReason: ptr("approval")}, "waiting_reason = 'approval'"},
		{"waitingKind", snapshot.RunFilter{WaitingKind: []vocab.WaitingKind{vocab.WaitingTimer}}, "waiting_reason = 'timer'"},
		{"createdAfter", snapshot.RunFilter{CreatedAfter: &after}, "created_at_ms >= " + strconv.FormatInt(int64(after), 10)},
		{"createdBefore", snapshot.RunFilter{CreatedBefore: &after}, "created_at_ms < " + strconv.FormatInt(int64(after), 10)},
		{"rootsOnly", snapshot.RunFilter{RootsOnly: &yes}, "execution_parent_id IS NULL"},
		{"cancelRequested", snapshot.RunFilter{CancelRequested: &yes}, "cancel_requested_at_ms IS NOT NULL AND finished_at_ms IS NULL"},
		{"heartbeatBefore", snapshot.RunFilter{HeartbeatBefore: &stale}, "status = 'running' AND heartbeat_at_ms < " + strconv.FormatInt(beat, 10)},
		// A finish window is listed by finish time, which its index serves.
		{"finishedAfter", snapshot.RunFilter{FinishedAfter: &fin}, "finished_at_ms >= " + strconv.FormatInt(finished, 10)},
		{"finishedBefore", snapshot.RunFilter{FinishedBefore: &fin}, "finished_at_ms < " + strconv.FormatInt(finished, 10)},
	}
	b.Logf("%d live runs, depth up to %d", live, depth)
	// The bare statement's columns: the run's, as flowsnap reads them (the
	// waiting token's digest, serve's privilege), and its change's.
	const columns = `r.run_id, c.revision, c.deleted, r.status, r.created_at_ms, r.started_at_ms, r.finished_at_ms,
	r.owner_host_id, r.owner_pid, r.owner_nonce, r.heartbeat_at_ms, r.claim_host_id, r.claim_pid, r.claim_nonce, r.claimed_at_ms,
	r.state_json, r.parent_run_id, r.execution_parent_id, r.lineage_id, r.round_ordinal,
	r.cancel_requested_at_ms, r.cancel_acknowledgement_json, r.waiting_reason, r.waiting_wake_at_ms, r.waiting_token_digest, r.waiting_request`
	// What flowsnap reads beside: each run's earliest spawn edge, the
	// effective parent of a run without a parent of its own.
	const edge = `,
	CASE WHEN r.parent_run_id IS NULL THEN
		(SELECT e.parent_id FROM flows_run_parents e WHERE e.child_id = r.run_id ORDER BY e.seq, e.parent_id LIMIT 1) END`
	for _, fl := range filters {
		order, col := snapshot.NewestFirst, "created_at_ms"
		if fl.filter.FinishedAfter != nil || fl.filter.FinishedBefore != nil {
			order, col = snapshot.FinishedNewestFirst, "finished_at_ms"
		}
		// The cursor at the filter's depth: its D-th newest run, or its
		// oldest but 1,000 when it selects fewer.
		var n int64
		one(`SELECT count(*) FROM (SELECT 1 FROM flows_runs WHERE `+fl.terms+` LIMIT `+strconv.FormatInt(depth+1001, 10)+`) AS k`, &n)
		d := max(0, min(depth, n-1000))
		var lastID string
		var lastCreated int64
		if d > 0 {
			one(`SELECT run_id, `+col+` FROM flows_runs WHERE `+fl.terms+` ORDER BY `+col+` DESC, run_id DESC LIMIT 1 OFFSET `+strconv.FormatInt(d, 10), &lastID, &lastCreated)
		}
		for _, deep := range []bool{false, true} {
			if deep && d == 0 {
				continue
			}
			req := snapshot.ListRequest{Filter: fl.filter, Order: order, First: ptr(100)}
			from := ` FROM (SELECT * FROM flows_runs WHERE ` + fl.terms + `) AS r JOIN flows_run_changes c ON c.run_id = r.run_id WHERE TRUE`
			name := fl.name + "/depth=0"
			if deep {
				pos, err := r.Position(ctx)
				if err != nil {
					b.Fatal(err)
				}
				req.After = ptr(snapshot.ListCursor(pos.Source, req, lastCreated, lastID))
				from += ` AND (r.` + col + `, r.run_id) < (` + strconv.FormatInt(lastCreated, 10) + `, ` + quoteLit(lastID) + `)`
				name = fl.name + "/depth=" + strconv.FormatInt(d, 10)
			}
			from += ` ORDER BY r.` + col + ` DESC, r.run_id DESC LIMIT 101`
			raw, rawEdges := `SELECT `+columns+from, `SELECT `+columns+edge+from
			edges := 0
			flowsnap := func() error {
				p, err := r.ListRuns(ctx, req)
				if err == nil {
					edges = len(p.Edges)
				}
				return err
			}
			// bare reads sql in the kind of transaction flowsnap reads in,
			// and checks that it read flowsnap's page.
			bare := func(sql string) func() error {
				return func() error {
					tx, err := ro.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
					if err != nil {
						return err
					}
					defer tx.Rollback(ctx)
					rows, err := tx.Query(ctx, sql)
					if err != nil {
						return fmt.Errorf("%w\n%s", err, sql)
					}
					defer rows.Close()
					n := 0
					for rows.Next() {
						if _, err := rows.Values(); err != nil {
							return err
						}
						n++
					}
					if err := rows.Err(); err != nil {
						return err
					}
					if min(n, 100) != edges {
						return fmt.Errorf("the bare statement read %d rows, flowsnap's page %d\n%s", n, edges, sql)
					}
					return nil
				}
			}
			if err := flowsnap(); err != nil {
				b.Fatal(err)
			}
			loop := func(read func() error) func(b *testing.B) {
				return func(b *testing.B) {
					for b.Loop() {
						if err := read(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(edges), "runs/page")
				}
			}
			b.Run(name+"/flowsnap", loop(flowsnap))
			b.Run(name+"/rawSQL", loop(bare(raw)))
			b.Run(name+"/rawSQLEdges", loop(bare(rawEdges)))
			// The three reads in turns, so that the machine's load weighs
			// on each alike: the median of each, and flowsnap's ratios.
			b.Run(name+"/paired", func(b *testing.B) {
				reads := []func() error{flowsnap, bare(raw), bare(rawEdges)}
				took := make([][]time.Duration, len(reads))
				for b.Loop() {
					for i, read := range reads {
						start := time.Now()
						if err := read(); err != nil {
							b.Fatal(err)
						}
						took[i] = append(took[i], time.Since(start))
					}
				}
				med := make([]float64, len(reads))
				for i, t := range took {
					slices.Sort(t)
					med[i] = float64(t[len(t)/2]) / 1e6
				}
				b.ReportMetric(med[0], "flowsnap-ms")
				b.ReportMetric(med[1], "rawSQL-ms")
				b.ReportMetric(med[2], "rawSQLEdges-ms")
				b.ReportMetric(med[0]/med[1], "x-rawSQL")
				b.ReportMetric(med[0]/med[2], "x-rawSQLEdges")
			})
		}
	}
}

// quoteLit is s as an SQL string literal.
func quoteLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
