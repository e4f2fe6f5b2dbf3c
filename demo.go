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
		simErr <- err
	}()

	r, err := store.Open(ctx, path, store.Options{ReadOnly: true, MaxReaders: opts.serve.maxReaders})
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(out, "a simulated engine keeps writing at %.0f transactions/s\n", opts.rate)
	err = serveStore(ctx, r, opts.serve)
	cancel()
	if serr := <-simErr; err == nil && serr != nil {
		err = fmt.Errorf("the simulated engine stopped: %w", serr)
	}
	return err
}
