package main

import (
	"fmt"
	"mime"
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowsnap/flowsnap/store"
)

// compressor encodes responses with zstd or gzip when the client asks
// (Accept-Encoding) and the body is worth it. Streams are left alone: an
// event stream must reach the client event by event, and a WebSocket
// upgrade hands its connection over.
func compressor() func(http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(gzhttp.ContentTypeFilter(func(ct string) bool {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "text/event-stream" {
			return false
		}
		return gzhttp.DefaultContentTypeFilter(ct)
	}))
	if err != nil {
		panic(fmt.Sprintf("gzhttp options: %v", err)) // fixed options: cannot fail
	}
	return func(h http.Handler) http.Handler {
		compressed := wrap(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" {
				h.ServeHTTP(w, r)
				return
			}
			compressed.ServeHTTP(w, r)
		})
	}
}

// httpMetrics counts HTTP responses by route and status code, and says
// which build is running and how many read transactions are open.
type httpMetrics struct {
	responses *prometheus.CounterVec
	// others are the build and reader gauges.
	others []prometheus.Collector
}

func newHTTPMetrics(db *store.DB) *httpMetrics {
	m := &httpMetrics{responses: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flowsnap_http_responses_total",
		Help: "HTTP responses by route and status code.",
	}, []string{"route", "code"})}
	b := buildInfo()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "flowsnap_build_info",
		Help:        "Always 1; its labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": b.version, "revision": b.revision, "goversion": b.goVersion},
	})
	info.Set(1)
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flowsnap_readers_in_use",
		Help: "Read transactions open now (connections lent out by the store's pool).",
	}, func() float64 { return float64(db.ReadersInUse()) })
	limit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flowsnap_readers_max",
		Help: "The most read transactions open at once (--max-readers).",
	}, func() float64 { return float64(db.MaxReaders()) })
	m.others = []prometheus.Collector{info, inUse, limit}
	return m
}

// Collectors are the metrics to register.
func (m *httpMetrics) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.responses}, m.others...)
}

// count counts h's responses under route.
func (m *httpMetrics) count(route string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerCounter(m.responses.MustCurryWith(prometheus.Labels{"route": route}), h)
}
