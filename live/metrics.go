package live

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the Watcher and its subscriptions do, for Prometheus.
type Metrics struct {
	open      prometheus.Gauge
	sent      prometheus.Counter
	coalesced prometheus.Counter
	tick      prometheus.Histogram
}

// NewMetrics makes the live metrics; the server registers them
// (Collectors) with the others.
func NewMetrics() *Metrics {
	m := &Metrics{
		open:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "flowsnap_live_subscribers", Help: "Subscriptions open now."}),
		sent:      prometheus.NewCounter(prometheus.CounterOpts{Name: "flowsnap_live_events_sent_total", Help: "Subscription events sent to clients."}),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts{Name: "flowsnap_live_events_coalesced_total", Help: "Changes merged into a notification a subscriber had not taken yet (a slow or busy consumer gets the latest state instead)."}),
		tick:      prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flowsnap_live_watcher_tick_seconds", Help: "How long one watcher tick (the revision and the changed run ids) took.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
	}
	return m
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.open, m.sent, m.coalesced, m.tick}
}
