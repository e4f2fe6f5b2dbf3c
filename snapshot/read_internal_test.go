package snapshot

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestAPanicInsideAReadStillReleasesItsTransaction panics at the points of
// a read where a bug could: inside the statement function of a read of its
// own, with a result set still open, and in an operation between Begin and
// its deferred End. Each time the transaction must be rolled back and its
// connection returned, and the reader must go on reading.
func TestAPanicInsideAReadStillReleasesItsTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		db := storetest.Open(t, d)
		r := NewReader(db)
		ctx := context.Background()
		for _, c := range []struct {
			name string
			fn   func()
		}{
			{"a panic in the statement function of a read of its own", func() {
				_ = r.with(ctx, func(q *querier) error {
					if _, err := q.runs([]string{"a"}); err != nil {
						return err
					}
					panic("boom")
				})
			}},
			{"a panic with a result set still open", func() {
				_ = r.with(ctx, func(q *querier) error {
					rows, err := q.query(selectRuns(q.dialect()), q.dialect().TextListArg([]string{"a", "b"}))
					if err != nil {
						return err
					}
					rows.Next()
					panic("boom")
				})
			}},
			{"a panic between Begin and a deferred End", func() {
				rctx, rd := r.Begin(ctx)
				defer rd.End()
				if _, err := r.Runs(rctx, []string{"a"}); err != nil {
					panic(err)
				}
				panic("boom")
			}},
			{"a panic in a goroutine of an operation that ends it", func() {
				rctx, rd := r.Begin(ctx)
				done := make(chan any)
				go func() {
					defer func() { done <- recover() }()
					defer rd.End()
					_, _ = r.Position(rctx)
					panic("boom")
				}()
				panic(<-done)
			}},
		} {
			t.Run(c.name+" releases the transaction", func(t *testing.T) {
				func() {
					defer func() {
						if p := recover(); p != "boom" {
							t.Fatalf("recovered %v, want the panic", p)
						}
					}()
					c.fn()
				}()
				if err := released(db, r); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Runs(ctx, []string{"a"}); err != nil {
					t.Fatalf("a read after the panic: %v", err)
				}
			})
		}
	})
}

// released waits briefly for every read connection of db to be back in its
// pool and its WAL gate to count no open read.
func released(db *store.DB, r *Reader) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var inUse int
		if db.Dialect() == store.SQLite {
			inUse = db.SQLReader().Stats().InUse
		} else {
			inUse = int(db.Pool().Stat().AcquiredConns())
		}
		active, _ := db.WALGate()
		if inUse == 0 && active == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d connections in use, %d reads open at the WAL gate", inUse, active)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
