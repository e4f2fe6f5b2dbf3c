package snapshot_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
)

// walBound is the most the SQLite WAL may grow to while flowsnap reads
// without pause and the engine writes without pause.
const walBound = 64 << 20

// TestTheWALStaysBoundedUnderContinuousReads keeps the reference engine
// writing to a SQLite store at a high rate while eight readers share one
// Reader and keep a read transaction open at every moment, and samples the
// size of the WAL file. Without the WAL gate the engine's checkpoints can
// never reset the WAL and it grows for as long as the reads overlap; with it
// the WAL must stay below walBound. Afterwards no read may be open.
//
// The load lasts a minute; FLOWSNAP_WAL_TEST_SECONDS sets another duration. Both variants run at the same time, on
// stores of their own, so they share the machine alike.
func TestTheWALStaysBoundedUnderContinuousReads(t *testing.T) {
	t.Parallel()
	duration := testSeconds(t, "FLOWSNAP_WAL_TEST_SECONDS", 60)
	for _, v := range []struct {
		gated       bool
		subscribers int
	}{{false, 0}, {true, 0}, {true, 100}} {
		gated := v.gated
		name := "without the gate the WAL grows"
		if gated {
			name = "with the gate the WAL stays bounded"
		}
		if v.subscribers > 0 {
			name += fmt.Sprintf(" with %d live subscribers", v.subscribers)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := walUnderLoad(t, duration, gated, v.subscribers)
			t.Logf("gate %v: WAL %.1f MiB after seeding, peak %.1f MiB over %v; %d reads, %d writes of large states beside the engine, %d drains by the gate",
				gated, float64(res.seeded)/(1<<20), float64(res.peak)/(1<<20), duration, res.reads, res.writes, res.drains)
			if gated && res.peak >= walBound {
				t.Fatalf("the WAL reached %.1f MiB, want below %d MiB", float64(res.peak)/(1<<20), walBound>>20)
			}
			if !gated && res.peak < walBound {
				// Not a failure of flowsnap: this machine was too slow for
				// the load to outgrow the bound without the gate.
				t.Logf("without the gate the WAL stayed below %d MiB", walBound>>20)
			}
		})
	}
}

type walResult struct {
	seeded, peak          int64
	reads, writes, drains int64
}

func walUnderLoad(t *testing.T, duration time.Duration, gated bool, subscribers int) walResult {
	f := newFixture(t, store.SQLite)
	ctx := context.Background()
	if !gated {
		ro, err := store.Open(ctx, f.dsn, store.Options{ReadOnly: true, NoWALGate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ro.Close)
		f.ro, f.r = ro, snapshot.NewReader(ro)
	}
	if _, err := engine.Seed(ctx, f.db, engine.SeedOptions{Runs: 2000, Seed: 7}); err != nil {
		t.Fatalf("seeding: %v", err)
	}
	// The ids to read: whatever the seed left.
	var ids []string
	tx, err := f.db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `SELECT run_id FROM flows_runs ORDER BY run_id LIMIT 1000`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	tx.Rollback(ctx)

	wal := f.db.SQLitePath() + "-wal"
	var res walResult
	if fi, err := os.Stat(wal); err == nil {
		res.seeded = fi.Size()
	}
	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var reads, writes atomic.Int64
	var wg sync.WaitGroup

	// The engine at up to 1,000 transactions a second, plus a writer of
	// large states so that the WAL grows fast enough to tell within the
	// test's duration.
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := engine.Simulate(runCtx, f.db, engine.SimOptions{Rate: 1000, Seed: 1}); err != nil {
			t.Errorf("simulating the engine: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		pad := make([]byte, 3000)
		for i := range pad {
			pad[i] = 'a' + byte(i%26)
		}
		// At most 500 writes a second, so that a fast machine does not
		// turn the bound into a race against its disk.
		pace := time.NewTicker(2 * time.Millisecond)
		defer pace.Stop()
		for runCtx.Err() == nil {
			<-pace.C
			id := ids[rng.IntN(len(ids))]
			state := fmt.Sprintf(`{"flowName":"wal","n":%d,"pad":"%s"}`, rng.Int64(), pad)
			err := f.db.Write(runCtx, func(tx store.Tx) error {
				_, err := tx.Exec(runCtx, `UPDATE flows_runs SET state_json = $2 WHERE run_id = $1`, id, state)
				return err
			})
			if err != nil && runCtx.Err() == nil {
				t.Errorf("writing: %v", err)
				return
			}
			writes.Add(1)
		}
	}()

	// Readers whose operations overlap: each holds its transaction a few
	// milliseconds, as a GraphQL operation resolving its fields does.
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 8))
			for runCtx.Err() == nil {
				rctx, rd := f.r.Begin(runCtx)
				batch := make([]string, 50)
				for i := range batch {
					batch[i] = ids[rng.IntN(len(ids))]
				}
				_, err := f.r.Runs(rctx, batch)
				if err == nil {
					time.Sleep(time.Duration(1+rng.IntN(4)) * time.Millisecond)
					_, err = f.r.Children(rctx, snapshot.PageRequest{Anchor: batch[0]})
				}
				rd.End()
				if err != nil && runCtx.Err() == nil {
					t.Errorf("reading: %v", err)
					return
				}
				reads.Add(1)
			}
		}()
	}

	// Live subscribers over SSE, half on position, half on a run each,
	// each event read in a snapshot of its own through the same Reader.
	if subscribers > 0 {
		events := liveSubscribers(t, runCtx, &wg, f.r, ids, subscribers)
		defer func() { t.Logf("%d live subscribers received %d events", subscribers, events.Load()) }()
	}

	// Sample the WAL's size.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if fi, err := os.Stat(wal); err == nil {
				res.peak = max(res.peak, fi.Size())
			}
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	wg.Wait()

	noOpenReads(t, f.ro)
	active, drains := f.ro.WALGate()
	if active != 0 {
		t.Fatalf("the WAL gate counts %d reads as open", active)
	}
	res.reads, res.writes, res.drains = reads.Load(), writes.Load(), int64(drains)
	return res
}

// liveSubscribers serves r with a watcher and holds n SSE subscriptions on
// it until ctx ends, counting the events they receive.
func liveSubscribers(t *testing.T, ctx context.Context, wg *sync.WaitGroup, r *snapshot.Reader, ids []string, n int) *atomic.Int64 {
	watcher := live.New(r, live.Options{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = watcher.Run(ctx)
	}()
	<-watcher.Ready()
	srv := httptest.NewServer(endpoint.NewHandler(r, endpoint.Options{Live: watcher}))
	t.Cleanup(srv.Close)
	var events atomic.Int64
	for i := range n {
		query := `{"query":"subscription { position { revision } }"}`
		if i%2 == 1 {
			query = fmt.Sprintf(`{"query":"subscription { run(id: \"%s\") { __typename ... on Run { status } } }"}`, ids[i%len(ids)])
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", strings.NewReader(query))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					if strings.Contains(sc.Text(), `"errors"`) {
						t.Errorf("a subscriber got an error: %s", sc.Text())
					}
					events.Add(1)
				}
			}
		}()
	}
	return &events
}
