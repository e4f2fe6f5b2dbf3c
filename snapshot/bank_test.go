package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// testSeconds returns the duration set by the environment variable name, in
// seconds, or def.
func testSeconds(t testing.TB, name string, def float64) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return time.Duration(def * float64(time.Second))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q is not a positive number of seconds", name, s)
	}
	return time.Duration(v * float64(time.Second))
}

// TestReadsNeverSeeATornTransfer is the bank test: accounts are runs whose
// state holds a balance, a writer moves amounts between two of them in one
// transaction each, and readers that read every account — by batches of ids
// and by pages of the children of the bank run, several statements per read,
// or all at once in one statement run alone, with the position read in it —
// must always see the same total. The batches go through the run cache, in
// both dialects, so that runs it answers and rows read beside them are one
// snapshot too; the reads alone go through a reader without one. Every
// fourth read is by batches through a reader as a server has it, its
// dialect's cache told of every change by a revision watcher ticking
// every few milliseconds, so that runs it takes without a statement are
// checked against the transfers too. FLOWSNAP_BANK_TEST_SECONDS sets how
// long the writer runs per dialect (default 4).
func TestReadsNeverSeeATornTransfer(t *testing.T) {
	t.Parallel()
	duration := testSeconds(t, "FLOWSNAP_BANK_TEST_SECONDS", 4)
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		const accounts, opening, readers = 60, 100, 4
		const total = accounts * opening
		f := newFixture(t, d)
		ids := make([]string, accounts)
		runs := []engine.NewRun{{ID: "bank", FlowName: "bank"}}
		for i := range ids {
			ids[i] = fmt.Sprintf("account-%02d", i)
			runs = append(runs, engine.NewRun{ID: ids[i], FlowName: "bank",
				State:   json.RawMessage(fmt.Sprintf(`{"balance":%d}`, opening)),
				Parents: []engine.ParentEdge{{ParentID: "bank", Seq: int64(i)}}})
		}
		f.create(t, runs...)
		f.r.SetRunCache(snapshot.DefaultRunCacheBytes)
		uncached := snapshot.NewReader(f.ro)
		uncached.SetRunCache(0)

		ctx, cancel := context.WithTimeout(context.Background(), duration)
		defer cancel()
		watched := snapshot.NewReader(f.ro)
		watcher := live.New(watched, live.Options{Interval: 2 * time.Millisecond})
		wctx, stopWatching := context.WithCancel(context.Background())
		defer stopWatching()
		go func() { _ = watcher.Run(wctx) }()
		<-watcher.Ready()
		var transfers, reads, batchReads, pageReads, aloneReads, watchedReads, torn, late, backwards atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(1, 2))
			for ctx.Err() == nil {
				a, b := rng.IntN(accounts), rng.IntN(accounts-1)
				if b >= a {
					b++
				}
				err := transfer(ctx, f.db, ids[a], ids[b], int64(1+rng.IntN(40)))
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					t.Errorf("transfer: %v", err)
					return
				}
				transfers.Add(1)
			}
		}()
		for g := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var last snapshot.Position
				for n := 0; ctx.Err() == nil; n++ {
					how := readHow((n + g) % 4)
					r := map[readHow]*snapshot.Reader{byBatches: f.r, byPages: f.r, alone: uncached, watchedBatches: watched}[how]
					sum, count, pos, maxRev, err := readAccounts(context.Background(), r, ids, how)
					if err != nil {
						t.Errorf("reading the accounts: %v", err)
						return
					}
					reads.Add(1)
					map[readHow]*atomic.Int64{byBatches: &batchReads, byPages: &pageReads, alone: &aloneReads, watchedBatches: &watchedReads}[how].Add(1)
					if sum != total || count != accounts {
						torn.Add(1)
						t.Errorf("a read at revision %d saw %d accounts holding %d, want %d holding %d", pos.Revision, count, sum, accounts, total)
					}
					if maxRev > pos.Revision {
						late.Add(1)
						t.Errorf("a read at revision %d saw a run at revision %d", pos.Revision, maxRev)
					}
					if pos.Revision < last.Revision || (last.Source != "" && pos.Source != last.Source) {
						backwards.Add(1)
						t.Errorf("a reader's position went from %+v back to %+v", last, pos)
					}
					last = pos
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d reads (%d by batches of ids, %d by pages of children, %d in one statement alone, %d by batches through the watched cache), %d transfers, %d torn reads, %d runs after the position, %d positions going back",
			d, reads.Load(), batchReads.Load(), pageReads.Load(), aloneReads.Load(), watchedReads.Load(), transfers.Load(), torn.Load(), late.Load(), backwards.Load())
		if torn.Load() != 0 || late.Load() != 0 || backwards.Load() != 0 {
			t.Fatalf("reads were not snapshots")
		}
		hits, misses, _ := f.r.RunCacheStats()
		watchedHits, _, _ := watched.RunCacheStats()
		t.Logf("%s: the run cache answered %d runs and missed %d; the watched one answered %d", d, hits, misses, watchedHits)
		if transfers.Load() < 10 || batchReads.Load() < 10 || pageReads.Load() < 10 || aloneReads.Load() < 10 || watchedReads.Load() < 10 ||
			hits < 10 || misses < 10 || watchedHits < 10 {
			t.Fatalf("too little happened to tell: %d transfers, %d reads by batches, %d by pages, %d alone, %d through the watched cache, %d runs from the cache, %d missed, %d from the watched one",
				transfers.Load(), batchReads.Load(), pageReads.Load(), aloneReads.Load(), watchedReads.Load(), hits, misses, watchedHits)
		}
		if sum, _, _, _, err := readAccounts(context.Background(), f.r, ids, byBatches); err != nil || sum != total {
			t.Fatalf("final total %d, %v; want %d", sum, err, total)
		}
		noOpenReads(t, f.ro)
	})
}

type account struct {
	Balance int64 `json:"balance"`
}

// transfer moves up to amount from one account to another in one
// transaction.
func transfer(ctx context.Context, db *store.DB, from, to string, amount int64) error {
	return db.Write(ctx, func(tx store.Tx) error {
		var raw [2]string
		var acct [2]account
		for i, id := range []string{from, to} {
			if err := tx.QueryRow(ctx, `SELECT state_json FROM flows_runs WHERE run_id = $1`, id).Scan(&raw[i]); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(raw[i]), &acct[i]); err != nil {
				return err
			}
		}
		amount = min(amount, acct[0].Balance)
		acct[0].Balance -= amount
		acct[1].Balance += amount
		for i, id := range []string{from, to} {
			state := fmt.Sprintf(`{"flowName":"bank","balance":%d}`, acct[i].Balance)
			if _, err := tx.Exec(ctx, `UPDATE flows_runs SET state_json = $2 WHERE run_id = $1`, id, state); err != nil {
				return err
			}
		}
		return nil
	})
}

// readAccounts reads every account in one read — by batches of 25 ids, or
// by pages of 25 children of the bank run — and returns their total, how
// many it found, the read's position and the highest revision among them.
// readHow is how readAccounts reads: several statements by batches of
// ids or by pages of children, or every account in one statement run
// alone (snapshot.Read.Alone).
type readHow int

const (
	byBatches readHow = iota
	byPages
	alone
	// watchedBatches is byBatches through a reader whose run cache a
	// revision watcher tells of every change.
	watchedBatches
)

func readAccounts(ctx context.Context, r *snapshot.Reader, ids []string, how readHow) (sum int64, count int, pos snapshot.Position, maxRev int64, err error) {
	ctx, rd := r.Begin(ctx)
	defer rd.End()
	if how == alone {
		rd.Alone()
	}
	add := func(res snapshot.Result[snapshot.Snapshot]) error {
		if res.Err != nil {
			return res.Err
		}
		run, ok := res.Value.(*snapshot.Run)
		if !ok {
			return fmt.Errorf("account %s is missing", res.Value.SnapshotID())
		}
		var a account
		if err := json.Unmarshal(run.State, &a); err != nil {
			return err
		}
		sum += a.Balance
		count++
		maxRev = max(maxRev, run.Revision)
		return nil
	}
	size := 25
	if how == alone {
		size = len(ids)
	}
	if how == byPages {
		var after *string
		for {
			p, err := r.Children(ctx, snapshot.PageRequest{Anchor: "bank", First: ptr(size), After: after})
			if err != nil {
				return 0, 0, pos, 0, err
			}
			for _, e := range p.Edges {
				if err := add(e.Node); err != nil {
					return 0, 0, pos, 0, err
				}
			}
			if !p.PageInfo.HasNextPage {
				break
			}
			after = p.PageInfo.EndCursor
		}
	} else {
		for i := 0; i < len(ids); i += size {
			res, err := r.Runs(ctx, ids[i:min(i+size, len(ids))])
			if err != nil {
				return 0, 0, pos, 0, err
			}
			for _, x := range res {
				if err := add(x); err != nil {
					return 0, 0, pos, 0, err
				}
			}
		}
	}
	if how == alone && !rd.RanAlone() {
		return 0, 0, pos, 0, fmt.Errorf("the read did not run alone")
	}
	pos, _ = rd.Position()
	return sum, count, pos, maxRev, nil
}
