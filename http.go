package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowsnap/flowsnap/graph"
	"github.com/flowsnap/flowsnap/graph/explorer"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
)

type serveOptions struct {
	addr            string
	timeout         time.Duration
	complexityLimit int
	maxDepth        int
	introspection   bool
	maxReaders      int
	logFormat       string
	// limits holds the request bounds of graph.Options (the Max* fields).
	limits graph.Options
	stdout io.Writer
	// debugAddr, when set, is where pprof and runtime metrics are served,
	// apart from the public listener.
	debugAddr string
	// ready, when set, receives the address the server listens on.
	ready func(addr string)
}

func (o serveOptions) logger() *slog.Logger {
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(o.stdout, nil))
	}
	return slog.New(slog.NewTextHandler(o.stdout, nil))
}

// serve opens dsn read-only, checks it is an engine store this flowsnap
// knows, and serves it until ctx ends.
func serve(ctx context.Context, dsn string, opts serveOptions) error {
	db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, MaxReaders: opts.maxReaders})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		return err
	}
	return serveStore(ctx, db, opts)
}

// serveStore serves db until ctx ends, then shuts down gracefully.
func serveStore(ctx context.Context, db *store.DB, opts serveOptions) error {
	log := opts.logger()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := graph.NewMetrics(reg)
	reader := snapshot.NewReader(db)
	reader.OnRead = metrics.ObserveRead

	mux := http.NewServeMux()
	gopts := opts.limits
	gopts.Timeout = opts.timeout
	gopts.ComplexityLimit = opts.complexityLimit
	gopts.MaxDepth = opts.maxDepth
	gopts.DisableIntrospection = !opts.introspection
	gopts.Logger = log
	gopts.Metrics = metrics
	mux.Handle("/graphql", graph.NewHandler(reader, gopts))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := reader.Position(ctx); err != nil {
			http.Error(w, "the store cannot be read", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if opts.introspection {
		page := explorer.Handler(explorer.Options{})
		mux.Handle("/", page)
		mux.Handle(explorer.AssetPrefix, page)
	}

	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.addr, err)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      opts.timeout + 15*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	fmt.Fprintf(opts.stdout, "flowsnap serving %s on http://%s/ (GraphQL at http://%s/graphql)\n", db, addr, addr)
	if opts.debugAddr != "" {
		stopDebug, err := serveDebug(ctx, opts.debugAddr, opts.stdout, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopDebug()
	}
	if opts.ready != nil {
		opts.ready(addr)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
