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
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/live"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/stats"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/telemetry"
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
	// stats configures the workflow metrics; its Logger is set by serve.
	stats stats.Options

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
	// auth configures authentication (authn.go); tlsCert and tlsKey, when
	// set, serve HTTPS; metricsAddr, when set, is a listener of its own for
	// /metrics, without a credential.
	auth            authOptions
	tlsCert, tlsKey string
	metricsAddr     string
	// ready, when set, receives the address the server listens on.
	ready func(addr string)
	// getenv is the environment tracing is configured from (OTEL_*).
	getenv func(string) string
	// tracing, when set, is used instead of what getenv configures; for
	// tests with an in-memory exporter.
	tracing *telemetry.Tracing
}

// logger writes one line per event, with the request's id and trace id
// on the lines of a request (telemetry.NewLogHandler); in JSON a duration
// is seconds, a float.
func (o serveOptions) logger() *slog.Logger {
	if o.logFormat == "json" {
		return slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(o.stdout, &slog.HandlerOptions{ReplaceAttr: telemetry.Seconds})))
	}
	return slog.New(telemetry.NewLogHandler(slog.NewTextHandler(o.stdout, nil)))
}

// withTracing returns opts with its tracing set up from the environment
// unless a test gave one, and the function that flushes it at the end.
func withTracing(ctx context.Context, opts serveOptions) (serveOptions, func(), error) {
	if opts.tracing != nil {
		return opts, func() {}, nil
	}
	getenv := opts.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	tr, err := telemetry.Setup(ctx, getenv, version())
	if err != nil {
		return opts, nil, err
	}
	opts.tracing = tr
	return opts, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			opts.logger().Warn("flushing traces failed", slog.Any("error", err))
		}
	}, nil
}

// serve opens dsn read-only, checks it is an engine store this flowsnap
// knows, and serves it until ctx ends.
func serve(ctx context.Context, dsn string, opts serveOptions) error {
	if err := opts.checkExposure(); err != nil {
		return err
	}
	opts, flush, err := withTracing(ctx, opts)
	if err != nil {
		return err
	}
	defer flush()
	db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, MaxReaders: opts.maxReaders, PGExecMode: opts.replica.pgExecMode,
		TracerProvider: opts.tracing.Provider})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		return err
	}
	return serveStore(ctx, db, opts)
}

// serveStore serves db until ctx ends, then shuts down gracefully; opts
// has its tracing set up (withTracing).
func serveStore(ctx context.Context, db *store.DB, opts serveOptions) error {
	started := time.Now()
	if opts.tracing == nil {
		opts.tracing = &telemetry.Tracing{}
	}
	log := opts.logger()
	if opts.gcPace != nil {
		opts.gcPace()
	}
	gcPercent := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(gcPercent)
	metrics := endpoint.NewMetrics()
	reader := snapshot.NewReader(db)
	if db.Dialect().InProcess() {
		reader.SetRunCache(opts.runCacheMB << 20)
	} else {
		reader.SetWatchedRunCache(opts.runCacheMB << 20)
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
	if err := readable(ctx, reader); err != nil {
		// Not fatal: privileges can be granted while serve runs; until
		// then /readyz says what is missing.
		log.Error("the store cannot be read; /readyz fails until it can", slog.String("error", fault.MessageOf(err)))
	}
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

	authn, err := startAuth(ctx, opts, log)
	if err != nil {
		return err
	}
	defer authn.stop()
	var certs *certFiles
	if opts.tlsCert != "" {
		if certs, err = loadCertFiles(opts.tlsCert, opts.tlsKey, log); err != nil {
			return err
		}
	}

	mux := http.NewServeMux()
	gopts := opts.limits
	gopts.Authenticator = authn.authenticator
	gopts.Timeout = opts.timeout
	gopts.ComplexityLimit = opts.complexityLimit
	gopts.MaxDepth = opts.maxDepth
	gopts.DisableIntrospection = !opts.introspection
	gopts.Logger = log
	gopts.Metrics = metrics
	gopts.Live = watcher
	gopts.Tracer = opts.tracing.Tracer("github.com/flowsnap/flowsnap/endpoint")
	hm := newHTTPMetrics(db)
	statsOpts := opts.stats
	statsOpts.StaleAfter, statsOpts.Logger = opts.staleAfter, log
	reg := newRegistry(metrics.Collectors(), liveMetrics.Collectors(), hm.Collectors(),
		runCacheCollectors(reader), []prometheus.Collector{replicaCollector{reader}, stats.New(reader, statsOpts), readyCollector(reader)})
	compress := compressor()
	mux.Handle("/graphql", hm.count("/graphql", compress(withCORS(endpoint.NewHandler(reader, gopts), opts.corsOrigins))))
	mux.Handle("GET /healthz", hm.count("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})))
	mux.Handle("GET /readyz", hm.count("/readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := readable(r.Context(), reader); err != nil {
			http.Error(w, "the store cannot be read: "+fault.MessageOf(err), http.StatusServiceUnavailable)
			return
		}
		report := replicaReport(reader)
		if st := authn.status(); st != "" {
			report += st + "\n"
		}
		_, _ = io.WriteString(w, "ok\n"+report)
	})))
	scrape := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if authn.authenticator != nil {
		// Scrapes on the public listener need a credential like any request.
		mux.Handle("GET /metrics", hm.count("/metrics", requireCredential(authn.authenticator, metrics, scrape)))
	} else {
		mux.Handle("GET /metrics", hm.count("/metrics", scrape))
	}
	// The dashboard needs no introspection; GraphiQL does, so it goes with it.
	pages := web.Options{Explorer: opts.introspection, StaleAfter: opts.staleAfter, Auth: authn.authenticator != nil}
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
	// Each answer goes to its client in one write (endpoint.CoalescingListener).
	ln = endpoint.CoalescingListener(ln)
	srv := &http.Server{
		Handler:           newHostGuard(telemetry.Middleware(mux, opts.tracing, traced), opts.allowedHosts, opts.addr, ln.Addr().String()),
		ConnContext:       endpoint.WithConn,
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
	scheme := "http://"
	if certs != nil {
		srv.TLSConfig = certs.tlsConfig()
		scheme = "https://"
	}
	// Through the logger, so that with --log-format json the output is JSON only.
	dashboard, explorer := scheme+addr+"/", ""
	if opts.introspection {
		explorer = scheme + addr + "/explorer"
	}
	log.Info("flowsnap serving", "store", db.String(), "url", dashboard, "graphql", scheme+addr+"/graphql", "explorer", explorer, "gcPercent", gcPercent[0].Value.Uint64(),
		"memoryLimit", gcPercent[1].Value.Uint64(), "tracing", opts.tracing.Provider != nil, "auth", cmpOr(opts.auth.mode, "none"), "tls", certs != nil)
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
	if opts.metricsAddr != "" {
		stopMetrics, err := serveMetrics(ctx, opts.metricsAddr, hm.count("/metrics", scrape), opts.stdout, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopMetrics()
	}
	// Subscriptions are refused (UNAVAILABLE) until the watcher has read
	// the store's revision once: that read, a few milliseconds, comes
	// before the server says it is ready. A store that cannot be read does
	// not hold the server back for more than a few seconds: that is
	// /readyz's to report.
	select {
	case <-watcher.Ready():
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	if opts.ready != nil {
		opts.ready(addr)
	}
	errc := make(chan error, 1)
	go func() {
		if certs != nil {
			// ServeTLS offers HTTP/2 (srv.TLSConfig names h2) and takes
			// the certificate from GetCertificate.
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("flowsnap shutting down", "reason", context.Cause(ctx).Error())
	// Subscriptions end first, each with its complete message, so that
	// Shutdown finds their streams finished rather than cutting them.
	stopping := time.Now()
	stopLive()
	<-liveDone
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	closeConns()
	if err == nil {
		if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = serr
		}
	} else {
		err = fmt.Errorf("shutting down: %w", err)
	}
	// The last line: how the server ended, after how long.
	attrs := []slog.Attr{slog.Duration("uptime", time.Since(started)), slog.Duration("shutdown", time.Since(stopping))}
	if err != nil {
		log.LogAttrs(context.WithoutCancel(ctx), slog.LevelError, "flowsnap stopped", append(attrs, slog.Any("error", err))...)
		return err
	}
	log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "flowsnap stopped", attrs...)
	return nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// serveMetrics listens on addr and serves /metrics there, without a
// credential, until the returned function stops it.
func serveMetrics(ctx context.Context, addr string, h http.Handler, stdout io.Writer, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for /metrics: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "metrics:   http://%s/metrics\n", ln.Addr())
	return serveSide(ctx, srv, ln, log, "metrics"), nil
}

// traced says which requests are traced: not the probes and scrapes,
// which come every few seconds and say nothing about an operation.
func traced(r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics", "/healthz", "/readyz":
		return false
	}
	return true
}

// readyCollector is flowsnap_ready: what /readyz says, at each scrape.
func readyCollector(reader *snapshot.Reader) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flowsnap_ready",
		Help: "1 when the store can be read (what /readyz answers 200 for), else 0; checked at each scrape.",
	}, func() float64 {
		if ready(context.Background(), reader) {
			return 1
		}
		return 0
	})
}

// ready reports whether the store can be read (readable). /readyz and
// flowsnap_ready both ask it.
func ready(ctx context.Context, reader *snapshot.Reader) bool {
	return readable(ctx, reader) == nil
}

// readable checks, within two seconds, that the store can be read: its
// position, and every table and column serving reads, so that a role
// without a privilege serving needs is not ready (docs/contract.md#least-privilege).
func readable(ctx context.Context, reader *snapshot.Reader) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return reader.Readable(ctx)
}
