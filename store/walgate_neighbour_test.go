package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// walWriter inserts runs of 3 KB each, as an engine writing would.
type walWriter struct {
	db  *store.DB
	pad string
	n   atomic.Int64
}

func (w *walWriter) write(ctx context.Context) error {
	n := w.n.Add(1)
	return w.db.Write(ctx, func(tx store.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json)
			VALUES ($1, 'pending', 0, $2)`, fmt.Sprintf("run-%08d", n), `{"flowName":"wal","pad":"`+w.pad+`"}`)
		return err
	})
}

func walSize(t testing.TB, db *store.DB) int64 {
	t.Helper()
	fi, err := os.Stat(db.SQLitePath() + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// cheapRead is the read a simple query makes: the position, through the
// gate.
func cheapRead(ctx context.Context, db *store.DB) error {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var rev int64
	return tx.QueryRow(ctx, `SELECT revision FROM flows_run_source WHERE singleton = 1`).Scan(&rev)
}

func TestTheWALGateNeverHoldsACheapReadBehindALongOne(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	ctx := testContext(t)
	w := &walWriter{db: db, pad: strings.Repeat("x", 3000)}
	// A long read, as an expensive list is, pins the WAL.
	long, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = long.Rollback(ctx) }()
	var rev int64
	if err := long.QueryRow(ctx, `SELECT revision FROM flows_run_source WHERE singleton = 1`).Scan(&rev); err != nil {
		t.Fatal(err)
	}
	// It has been open longer than a cheap read ever is (the gate's idle
	// wait, 100ms) before the gate looks: on a quiet machine the writes
	// below fill the WAL sooner than that.
	time.Sleep(300 * time.Millisecond)
	for walSize(t, db) < 2*store.WALGateThreshold(db) {
		if err := w.write(ctx); err != nil {
			t.Fatal(err)
		}
	}
	store.WALGateLook(db)
	for range 20 {
		if err := w.write(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The WAL is large and growing without a reset: the next read to
	// enter looks, and the gate used to drain, holding it behind the long
	// read for seconds.
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if err := cheapRead(ctx, db); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a cheap read waited %s beside a long read", took)
	}
	if passes, drains := store.WALGatePasses(db); passes == 0 || drains != 0 {
		t.Fatalf("the gate passed %d times and drained %d times beside the long read; want passes and no drain", passes, drains)
	}
	// Once the long read has ended, the engine resets the WAL.
	walPath := db.SQLitePath() + "-wal"
	before := store.WALStamp(walPath)
	_ = long.Rollback(ctx)
	for i := 0; store.WALStamp(walPath) == before; i++ {
		if i > 1000 {
			t.Fatal("the WAL was never reset once the long read had ended")
		}
		if err := w.write(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cheapRead(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkWALGateBesideALongRead measures a cheap read's latency on SQLite
// while an engine writes (200 transactions/s of 3 KB) and long reads (each
// a statement cut short by its limit of 500 ms, as an expensive list is) run
// back to back: with the gate as it is (a drain gives up after 100 ms, and
// none starts beside a read older than that), the gate as it was (a drain
// waited up to seconds for the open reads to end), and no gate. It reports
// the cheap read's p50 and p99 and the largest WAL seen.
//
//	go test ./store -run '^$' -bench BenchmarkWALGateBesideALongRead -benchtime 1500x
func BenchmarkWALGateBesideALongRead(b *testing.B) {
	for _, c := range []struct {
		name     string
		idleWait time.Duration
		noGate   bool
	}{
		{name: "gate=bounded"},
		{name: "gate=seconds", idleWait: 5250 * time.Millisecond},
		{name: "gate=off", noGate: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			dsn := storetest.DSN(b, store.SQLite)
			storetest.OpenDSN(b, dsn, true)
			db, err := store.Open(context.Background(), dsn, store.Options{NoWALGate: c.noGate})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if !c.noGate {
				store.SetWALGateThreshold(db, 512<<10)
				if c.idleWait > 0 {
					store.SetWALGateIdleWait(db, c.idleWait)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			w := &walWriter{db: db, pad: strings.Repeat("x", 3000)}
			var maxWAL atomic.Int64
			wg.Go(func() {
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for ctx.Err() == nil {
					<-tick.C
					_ = w.write(ctx)
					if s := walSize(b, db); s > maxWAL.Load() {
						maxWAL.Store(s)
					}
				}
			})
			wg.Go(func() {
				for ctx.Err() == nil {
					tx, err := db.BeginRead(ctx)
					if err != nil {
						continue
					}
					if rows, err := tx.(store.LimitedQuerier).QueryLimited(ctx, 500*time.Millisecond, slowStatement(store.SQLite)); err == nil {
						for rows.Next() {
						}
						rows.Close()
					}
					_ = tx.Rollback(context.Background())
				}
			})
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := cheapRead(ctx, db); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				time.Sleep(2 * time.Millisecond)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(maxWAL.Load())/(1<<20), "max-wal-MiB")
		})
	}
}
