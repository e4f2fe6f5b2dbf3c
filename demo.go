package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
)

type demoOptions struct {
	data  string
	runs  int
	rate  float64
	serve serveOptions
}

// demo creates (or reuses) a SQLite engine store in the data folder, seeds
// it when new, keeps a simulated engine writing to it and serves it.
func demo(ctx context.Context, opts demoOptions) error {
	if err := opts.serve.checkExposure(); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.data, 0o755); err != nil {
		return fmt.Errorf("creating the data folder: %w", err)
	}
	path := filepath.Join(opts.data, "engine.db")
	_, statErr := os.Stat(path)
	fresh := errors.Is(statErr, os.ErrNotExist)

	w, err := openMigrated(ctx, path)
	if err != nil {
		return err
	}
	defer w.Close()
	out := opts.serve.stdout
	if fresh {
		fmt.Fprintf(out, "seeding a new demo store at %s with %d runs…\n", path, opts.runs)
		start := time.Now()
		stats, err := engine.Seed(ctx, w, engine.SeedOptions{Runs: opts.runs, Seed: 1})
		if err != nil {
			return fmt.Errorf("seeding the demo store: %w", err)
		}
		fmt.Fprintf(out, "seeded %d runs in %s\n", stats.Runs, time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Fprintf(out, "reusing the demo store at %s (delete the folder to start afresh)\n", path)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	simErr := make(chan error, 1)
	go func() {
		err := engine.Simulate(ctx, w, engine.SimOptions{Rate: opts.rate, Seed: time.Now().UnixNano(), Out: io.Discard})
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		if err != nil {
			// The store stays readable; say so now rather than at exit.
			fmt.Fprintf(out, "the simulated engine stopped: %v\n", err)
		}
		simErr <- err
	}()

	serveOpts, flush, err := withTracing(ctx, opts.serve)
	if err != nil {
		return err
	}
	defer flush()
	r, err := store.Open(ctx, path, store.Options{ReadOnly: true, MaxReaders: opts.serve.maxReaders, TracerProvider: serveOpts.tracing.Provider})
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(out, "a simulated engine keeps writing at %.0f transactions/s\n", opts.rate)
	suggest(ctx, r, out)
	err = serveStore(ctx, r, serveOpts)
	cancel()
	if serr := <-simErr; err == nil && serr != nil {
		err = fmt.Errorf("the simulated engine stopped: %w", serr)
	}
	return err
}

// suggestions are queries that find runs worth opening.
var suggestions = []struct{ what, sql string }{
	{"the largest fan-out", `SELECT parent_id FROM flows_run_parents GROUP BY parent_id ORDER BY count(*) DESC, parent_id LIMIT 1`},
	{"the longest lineage", `SELECT lineage_id FROM flows_runs WHERE lineage_id IS NOT NULL GROUP BY lineage_id ORDER BY count(*) DESC, lineage_id LIMIT 1`},
	{"a run waiting for approval", `SELECT run_id FROM flows_runs WHERE waiting_reason = 'approval' ORDER BY run_id LIMIT 1`},
	{"a failed run", `SELECT run_id FROM flows_runs WHERE status = 'failed' ORDER BY run_id LIMIT 1`},
	{"a run being cancelled", `SELECT run_id FROM flows_runs WHERE cancel_requested_at_ms IS NOT NULL AND status = 'running' ORDER BY run_id LIMIT 1`},
}

// suggest prints a few run ids worth opening, so a newcomer has somewhere
// to start.
func suggest(ctx context.Context, db *store.DB, out io.Writer) {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	fmt.Fprintln(out, "runs worth opening (in the dashboard at /#/run/ID, or in the explorer as the variable \"id\"):")
	for _, s := range suggestions {
		var id string
		if tx.QueryRow(ctx, s.sql).Scan(&id) == nil {
			fmt.Fprintf(out, "  %-28s %s\n", s.what+":", id)
		}
	}
}
