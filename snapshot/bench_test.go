package snapshot_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkBatch100 reads 100 runs of a seeded store per operation, each
// time in a read transaction of its own: .../flowsnap through Reader.Runs
// (the position, the runs with their change rows and earliest edges, decoded
// and checked), .../rawSQL with a bare SELECT of the same run columns by
// run_id IN (...) scanned into plain values. Their ratio is what a
// consistent, checked snapshot costs over reading the rows.
func BenchmarkBatch100(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d)
			ctx := context.Background()
			if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: 3000, Seed: 11}); err != nil {
				b.Fatal(err)
			}
			ids := sampleRunIDs(b, f, 100)
			b.Run("flowsnap", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rctx, rd := f.r.Begin(ctx)
					res, err := f.r.Runs(rctx, ids)
					rd.End()
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range res {
						if r.Err != nil {
							b.Fatal(r.Err)
						}
					}
				}
			})
			b.Run("rawSQL", func(b *testing.B) {
				query, args := rawRunsQuery(ids)
				b.ReportAllocs()
				for b.Loop() {
					if n := rawRuns(b, f.ro, query, args); n != len(ids) {
						b.Fatalf("read %d runs, want %d", n, len(ids))
					}
				}
			})
		})
	}
}

// sampleRunIDs returns n ids of live runs, picked at random with a fixed
// seed.
func sampleRunIDs(b *testing.B, f *fixture, n int) []string {
	ctx := context.Background()
	tx, err := f.db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `SELECT run_id FROM flows_runs ORDER BY run_id`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		all = append(all, id)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	if len(all) < n {
		b.Fatalf("the seed left %d runs, want %d", len(all), n)
	}
	return all[:n]
}

// rawRunsQuery is a bare SELECT of the run columns flowsnap reads, by
// run_id IN (...).
func rawRunsQuery(ids []string) (string, []any) {
	marks := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		marks[i] = fmt.Sprintf("$%d", i+1)
		args[i] = id
	}
	return `SELECT run_id, status, created_at_ms, started_at_ms, finished_at_ms,
	owner_host_id, owner_pid, owner_nonce, heartbeat_at_ms,
	claim_host_id, claim_pid, claim_nonce, claimed_at_ms,
	state_json, parent_run_id, execution_parent_id, lineage_id, round_ordinal,
	cancel_requested_at_ms, cancel_acknowledgement_json,
	waiting_reason, waiting_wake_at_ms, waiting_token, waiting_request
FROM flows_runs WHERE run_id IN (` + strings.Join(marks, ", ") + `)`, args
}

// rawRunRow is a run's columns as plain values.
type rawRunRow struct {
	id, status                   string
	created                      int64
	started, finished            *int64
	ownerHost, ownerNonce        *string
	ownerPid, heartbeat          *int64
	claimHost, claimNonce        *string
	claimPid, claimedAt          *int64
	state                        string
	parent, execParent, lineage  *string
	ordinal, cancelRequested     *int64
	cancelAck, waitingReason     *string
	waitingWake                  *int64
	waitingToken, waitingRequest *string
}

// rawRuns reads the rows of query in a read transaction of its own, as
// BeginRead opens it, and returns how many there were.
func rawRuns(b *testing.B, db *store.DB, query string, args []any) int {
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	n := 0
	var r rawRunRow
	for rows.Next() {
		if err := rows.Scan(&r.id, &r.status, &r.created, &r.started, &r.finished,
			&r.ownerHost, &r.ownerPid, &r.ownerNonce, &r.heartbeat,
			&r.claimHost, &r.claimPid, &r.claimNonce, &r.claimedAt,
			&r.state, &r.parent, &r.execParent, &r.lineage, &r.ordinal,
			&r.cancelRequested, &r.cancelAck,
			&r.waitingReason, &r.waitingWake, &r.waitingToken, &r.waitingRequest); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkChildrenPage reads a page of 100 children of a run with 100,100
// children, in a read of its own per operation: .../depth0 the first page,
// .../depth100000 the page after the 100,000th child. Keyset paging should
// make the two cost the same.
func BenchmarkChildrenPage(b *testing.B) {
	const children, depth = 100_100, 100_000
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d)
			ctx := context.Background()
			seedChildren(b, f, "hub", children)
			pos, err := f.r.Position(ctx)
			if err != nil {
				b.Fatal(err)
			}
			deep := childrenCursor(pos.Source, "hub", depth-1, childID(depth-1))
			for _, c := range []struct {
				name  string
				after *string
				first string
			}{
				{"depth0", nil, childID(0)},
				{fmt.Sprintf("depth%d", depth), &deep, childID(depth)},
			} {
				b.Run(c.name, func(b *testing.B) {
					first := 100
					b.ReportAllocs()
					for b.Loop() {
						rctx, rd := f.r.Begin(ctx)
						p, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "hub", First: &first, After: c.after})
						rd.End()
						if err != nil {
							b.Fatal(err)
						}
						if len(p.Edges) != 100 || p.Edges[0].RunID != c.first || p.Edges[0].Node.Err != nil {
							b.Fatalf("page of %d edges from %s", len(p.Edges), p.Edges[0].RunID)
						}
					}
				})
			}
		})
	}
}

func childID(i int) string { return fmt.Sprintf("child-%06d", i) }

// seedChildren writes parent and n children of it at seq 0..n-1 in one
// transaction, with multi-row INSERTs. On SQLite the store's triggers keep
// the revisions as for any writer. On PostgreSQL they would make it
// quadratic: every edge updates the one flows_run_source row twice, and the
// versions of that row a transaction leaves cannot be pruned before it
// commits. There the transaction turns the triggers off and writes the
// change rows and the revision they would have written, in bulk.
func seedChildren(b *testing.B, f *fixture, parent string, n int) {
	ctx := context.Background()
	const chunk = 1000
	pg := f.d == store.Postgres
	err := f.db.Write(ctx, func(tx store.Tx) error {
		if pg {
			if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json)
			VALUES ($1, 'pending', 1, '{"flowName":"fan-out"}')`, parent); err != nil {
			return err
		}
		for lo := 0; lo < n; lo += chunk {
			var runs, edges strings.Builder
			var runArgs, edgeArgs []any
			for i := lo; i < min(lo+chunk, n); i++ {
				if i > lo {
					runs.WriteString(", ")
					edges.WriteString(", ")
				}
				k := len(runArgs)
				fmt.Fprintf(&runs, "($%d, 'completed', $%d, $%d, $%d, $%d, $%d, $%d)", k+1, k+2, k+3, k+4, k+5, k+6, k+7)
				runArgs = append(runArgs, childID(i), int64(1000+i), int64(1000+i), int64(2000+i),
					fmt.Sprintf(`{"flowName":"leaf","input":{"n":%d},"output":{"ok":true}}`, i), parent, parent)
				k = len(edgeArgs)
				fmt.Fprintf(&edges, "($%d, $%d, $%d)", k+1, k+2, k+3)
				edgeArgs = append(edgeArgs, parent, childID(i), int64(i))
			}
			if _, err := tx.Exec(ctx, `INSERT INTO flows_runs (run_id, status, created_at_ms, started_at_ms, finished_at_ms,
				state_json, parent_run_id, execution_parent_id) VALUES `+runs.String(), runArgs...); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO flows_run_parents (parent_id, child_id, seq) VALUES `+edges.String(), edgeArgs...); err != nil {
				return err
			}
		}
		if !pg {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO flows_run_changes (run_id, revision, deleted)
			SELECT r.run_id, s.revision + row_number() OVER (ORDER BY r.run_id), 0
			FROM flows_runs AS r CROSS JOIN flows_run_source AS s
			WHERE NOT EXISTS (SELECT 1 FROM flows_run_changes AS c WHERE c.run_id = r.run_id)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE flows_run_source SET revision = (SELECT max(revision) FROM flows_run_changes)`)
		return err
	})
	if err != nil {
		b.Fatalf("seeding %d children: %v", n, err)
	}
}
