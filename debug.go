package main

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"regexp"
	"runtime/metrics"
	"strings"
	"time"
)

// debugHandler serves what an operator needs to profile a live server:
// net/http/pprof under /debug/pprof/, expvar (memstats, cmdline) at
// /debug/vars, and every runtime/metrics sample as text at
// /debug/runtime-metrics. It belongs on a listener of its own, never on the
// public one.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		// pprof.Cmdline, with passwords redacted.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, strings.Join(redactedArgs(), "\x00"))
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/vars", debugVars)
	mux.HandleFunc("GET /debug/runtime-metrics", func(w http.ResponseWriter, _ *http.Request) {
		descs := metrics.All()
		samples := make([]metrics.Sample, len(descs))
		for i, d := range descs {
			samples[i].Name = d.Name
		}
		metrics.Read(samples)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, s := range samples {
			switch s.Value.Kind() {
			case metrics.KindUint64:
				fmt.Fprintf(w, "%s %d\n", s.Name, s.Value.Uint64())
			case metrics.KindFloat64:
				fmt.Fprintf(w, "%s %g\n", s.Name, s.Value.Float64())
			case metrics.KindFloat64Histogram:
				h := s.Value.Float64Histogram()
				var n uint64
				for _, c := range h.Counts {
					n += c
				}
				fmt.Fprintf(w, "%s count=%d\n", s.Name, n)
			}
		}
	})
	return mux
}

// passwordInURL is the password of a URL's userinfo (scheme://user:password@),
// and passwordParam a password given as a parameter (password=…), as a DSN
// may carry either.
var (
	passwordInURL = regexp.MustCompile(`(://[^:/@\s]*:)[^@\s]*@`)
	passwordParam = regexp.MustCompile(`(?i)(password=)[^&\s]*`)
)

// redactPasswords replaces every password a DSN in s may carry.
func redactPasswords(s string) string {
	s = passwordInURL.ReplaceAllString(s, "${1}REDACTED@")
	return passwordParam.ReplaceAllString(s, "${1}REDACTED")
}

// redactedArgs is the command line with its passwords redacted: a --db or
// --replica flag carries a DSN.
func redactedArgs() []string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		args[i] = redactPasswords(a)
	}
	return args
}

// debugVars is expvar's /debug/vars with the command line's passwords
// redacted.
func debugVars(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = io.WriteString(w, "{\n")
	first := true
	expvar.Do(func(kv expvar.KeyValue) {
		if !first {
			_, _ = io.WriteString(w, ",\n")
		}
		first = false
		v := kv.Value.String()
		if kv.Key == "cmdline" {
			b, _ := json.Marshal(redactedArgs())
			v = string(b)
		}
		fmt.Fprintf(w, "%q: %s", kv.Key, v)
	})
	_, _ = io.WriteString(w, "\n}\n")
}

// serveDebug listens on addr and serves debugHandler until ctx ends; it
// returns once the listener is open, with the address it listens on and a
// function that stops it.
func serveDebug(ctx context.Context, addr string, stdout io.Writer, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for the debug endpoints: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           debugHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		// A CPU profile or trace runs for as long as it is asked to.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stdout, "flowsnap debug endpoints at http://%s/debug/pprof/\n", ln.Addr())
	return serveSide(ctx, srv, ln, log, "debug endpoints"), nil
}

// serveSide serves srv on ln, a listener beside the API's (the debug
// endpoints, /metrics), logging why it stopped unless it was told to, and
// returns the function that stops it.
func serveSide(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger, what string) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the "+what+" listener stopped", slog.String("error", err.Error()))
		}
	}()
	return func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		<-done
	}
}
