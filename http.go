package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/web"
)

// serveOptions is the configuration of serve and of the demo's server:
// each field bound to its flag and environment twin (binder.serveFlags),
// passed whole.
type serveOptions struct {
	addr            string
	timeout         time.Duration
	complexityLimit int
	maxDepth        int
	introspection   bool
	maxReaders      int
	// runCacheMB is the run cache of a SQLite store's reader, in MiB.
	runCacheMB  int
	logFormat   string
	corsOrigins []string
	// limits holds the request bounds of endpoint.Options (the Max* fields).
	limits  endpoint.Options
	stdout  io.Writer
	replica replicaOptions

	// staleAfter is when a running run's heartbeat counts as stale.
	staleAfter time.Duration
	// liveInterval and maxSubscriptions configure subscriptions (package live).
	liveInterval     time.Duration
	maxSubscriptions int
	// debugAddr, when set, is where pprof and runtime metrics are served,
	// apart from the public listener.
	debugAddr string
	// gcPercent is --gc-percent; gcPace, when set, sets the garbage
	// collector's percent from it (package gcpace).
	gcPercent int
	gcPace    func()
	// statementTimeout bounds each list and count statement, and
	// expensiveReads how many of them run at once (0: a quarter of the
	// readers).
	statementTimeout time.Duration
	expensiveReads   int
	// allowedHosts are the Host names answered besides loopback's and the
	// listen address's (hostGuard).
	allowedHosts []string
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
	db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, MaxReaders: opts.maxReaders, PGExecMode: opts.replica.pgExecMode})
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
	if opts.gcPace != nil {
		opts.gcPace()
	}
	gcPercent := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gcPercent)
	metrics := endpoint.NewMetrics()
	reader := snapshot.NewReader(db)
	if db.Dialect().InProcess() {
		reader.SetRunCache(opts.runCacheMB << 20)
	}
	reader.OnRead = metrics.ObserveRead
	lane := opts.expensiveReads
	if lane <= 0 {
		lane = snapshot.DefaultLane(db.MaxReaders())
	}
	reader.SetStatementLimit(opts.statementTimeout, lane)
	replicas, err := openReplicas(ctx, reader, opts)
	if err != nil {
		return err
	}
	defer closeReplicas(replicas)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go reader.WatchReplicas(watchCtx)
	// The cost of a list its index cannot serve is the store's runs.
	go reader.KeepRunEstimate(watchCtx, 30*time.Second)
	liveMetrics := live.NewMetrics()
	watcher := live.New(reader, live.Options{
		Interval: opts.liveInterval, MaxSubscriptions: opts.maxSubscriptions,
		Metrics: liveMetrics, Logger: log,
	})
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLive()
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		_ = watcher.Run(liveCtx)
	}()

	mux := http.NewServeMux()
	gopts := opts.limits
	gopts.Timeout = opts.timeout
	gopts.ComplexityLimit = opts.complexityLimit
	gopts.MaxDepth = opts.maxDepth
	gopts.DisableIntrospection = !opts.introspection
	gopts.Logger = log
	gopts.Metrics = metrics
	gopts.Live = watcher
	hm := newHTTPMetrics(db)
	reg := newRegistry(metrics.Collectors(), liveMetrics.Collectors(), hm.Collectors(),
		runCacheCollectors(reader), []prometheus.Collector{replicaCollector{reader}})
	compress := compressor()
	mux.Handle("/graphql", hm.count("/graphql", compress(withCORS(endpoint.NewHandler(reader, gopts), opts.corsOrigins))))
	mux.Handle("GET /healthz", hm.count("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})))
	mux.Handle("GET /readyz", hm.count("/readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := reader.Position(ctx); err != nil {
			http.Error(w, "the store cannot be read", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n"+replicaReport(reader))
	})))
	mux.Handle("GET /metrics", hm.count("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	// The dashboard needs no introspection; GraphiQL does, so it goes with it.
	pages := web.Options{Explorer: opts.introspection, StaleAfter: opts.staleAfter}
	pagesHandler := compress(web.Handler(pages))
	for _, p := range web.Paths(pages) {
		mux.Handle(p, hm.count(p, pagesHandler))
	}

	connCtx, closeConns := context.WithCancel(context.WithoutCancel(ctx))
	defer closeConns()
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.addr, err)
	}
	srv := &http.Server{
		Handler:           newHostGuard(mux, opts.allowedHosts, opts.addr, ln.Addr().String()),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      opts.timeout + 15*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// WebSocket connections outlive Shutdown (they are hijacked); this
		// context, cancelled once it is done, closes them.
		BaseContext: func(net.Listener) context.Context { return connCtx },
	}
	addr := ln.Addr().String()
	// Through the logger, so that with --log-format json the output is JSON only.
	dashboard, explorer := "http://"+addr+"/", ""
	if opts.introspection {
		explorer = "http://" + addr + "/explorer"
	}
	log.Info("flowsnap serving", "store", db.String(), "url", dashboard, "graphql", "http://"+addr+"/graphql", "explorer", explorer, "gcPercent", gcPercent[0].Value.Uint64())
	if opts.logFormat != "json" {
		// The pages' addresses on lines of their own, to click or copy.
		fmt.Fprintf(opts.stdout, "dashboard: %s\n", dashboard)
		if explorer != "" {
			fmt.Fprintf(opts.stdout, "explorer:  %s\n", explorer)
		}
	}
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
	// Subscriptions end first, each with its complete message, so that
	// Shutdown finds their streams finished rather than cutting them.
	stopLive()
	<-liveDone
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	closeConns()
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
