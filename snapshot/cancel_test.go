package snapshot_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestCancelledReadsLeaveNoTransactionOpen runs thousands of reads whose
// contexts end at random points — before the read begins, while it runs,
// after it read but before it ended — or carry tiny deadlines. Every read
// must succeed or fail with TIMEOUT, and afterwards no read transaction may
// be open and no connection held.
func TestCancelledReadsLeaveNoTransactionOpen(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		app := ""
		if d == store.Postgres {
			// Name the reader's sessions, to find them among the server's.
			var b [4]byte
			_, _ = rand.Read(b[:])
			app = "flowsnap_cancel_" + hex.EncodeToString(b[:])
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("application_name", app)
			u.RawQuery = q.Encode()
			dsn = u.String()
		}
		db := storetest.OpenDSN(t, dsn, true)
		ro := storetest.OpenReader(t, dsn)
		r := snapshot.NewReader(ro)
		w := engine.NewWriter(db, nil)

		runs := []engine.NewRun{{ID: "parent", FlowName: "fan-out"}}
		ids := []string{"parent", "nobody"}
		for i := range 60 {
			id := fmt.Sprintf("child-%02d", i)
			ids = append(ids, id)
			runs = append(runs, engine.NewRun{ID: id, FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: int64(i)}}})
		}
		if err := w.Do(context.Background(), func(tx *engine.Tx) error {
			for _, run := range runs {
				if err := tx.CreateRun(context.Background(), run); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}

		const workers, perWorker = 8, 400
		var ok, timeouts atomic.Int64
		var byWhen [5]atomic.Int64
		var wg sync.WaitGroup
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := mrand.New(mrand.NewPCG(uint64(g), 9))
				for range perWorker {
					when := rng.IntN(len(byWhen))
					byWhen[when].Add(1)
					err := cancelledRead(r, ids, rng, when)
					switch code := fault.CodeOf(err); {
					case code == "":
						ok.Add(1)
					case when == 2 || when == 4:
						t.Errorf("a read that was not cancelled while it read failed: %v", err)
						return
					case code == fault.Timeout:
						timeouts.Add(1)
					default:
						t.Errorf("a cancelled read failed with %s, want TIMEOUT: %v", code, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d reads (%d cancelled before beginning, %d during, %d after reading, %d with a deadline of at most 2ms, %d not cancelled): %d succeeded, %d timed out",
			d, workers*perWorker, byWhen[0].Load(), byWhen[1].Load(), byWhen[2].Load(), byWhen[3].Load(), byWhen[4].Load(), ok.Load(), timeouts.Load())
		if timeouts.Load() == 0 || ok.Load() == 0 {
			t.Fatalf("the reads did not both succeed and time out")
		}

		noOpenReads(t, ro)
		if active, _ := ro.WALGate(); active != 0 {
			t.Fatalf("the WAL gate counts %d reads as open", active)
		}
		if d == store.Postgres {
			eventually(t, 5*time.Second, "reader sessions idle in a transaction", func() (bool, string) {
				ctx := context.Background()
				conn, err := pgConnect(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				var n int64
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND state LIKE 'idle in transaction%'`, app).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 0, fmt.Sprintf("%d sessions", n)
			})
		}
		// The reader still reads.
		res, err := r.Runs(context.Background(), ids)
		if err != nil || len(res) != len(ids) {
			t.Fatalf("a read after the storm: %v", err)
		}
	})
}

// cancelledRead runs one random read whose context ends at the point when
// names: 0 before the read begins, 1 at a random moment while it runs, 2
// after it read but before it ended, 3 by a deadline of at most 2ms, 4
// never.
//
// Every read has a deadline of a minute besides, so that a read that waits
// forever fails the test instead of hanging it.
func cancelledRead(r *snapshot.Reader, ids []string, rng *mrand.Rand, when int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch when {
	case 0:
		cancel()
	case 1:
		time.AfterFunc(time.Duration(rng.IntN(1500))*time.Microsecond, cancel)
	case 3:
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, time.Duration(rng.IntN(2000))*time.Microsecond)
		defer c()
	}
	batch := ids[rng.IntN(len(ids)/2):]
	batch = batch[:min(len(batch), 1+rng.IntN(snapshot.MaxBatch))]
	first := 1 + rng.IntN(snapshot.MaxPageSize)
	ops := []func(ctx context.Context) error{
		func(ctx context.Context) error {
			res, err := r.Runs(ctx, batch)
			if err == nil && len(res) != len(batch) {
				return fmt.Errorf("%d results for %d ids", len(res), len(batch))
			}
			return err
		},
		func(ctx context.Context) error {
			_, err := r.Pages(ctx, cursor.Children, []snapshot.PageRequest{{Anchor: "parent", First: &first}, {Anchor: "child-01"}})
			return err
		},
		func(ctx context.Context) error {
			_, err := r.Rounds(ctx, snapshot.PageRequest{Anchor: "parent", Lineage: "parent", First: &first})
			return err
		},
		func(ctx context.Context) error {
			_, err := r.Position(ctx)
			return err
		},
	}
	if rng.IntN(2) == 0 {
		// A read of its own.
		return ops[rng.IntN(len(ops))](ctx)
	}
	// An operation of several reads in one transaction.
	rctx, rd := r.Begin(ctx)
	defer rd.End()
	for range 1 + rng.IntN(3) {
		if err := ops[rng.IntN(len(ops))](rctx); err != nil {
			return err
		}
	}
	if when == 2 {
		cancel()
	}
	return nil
}
