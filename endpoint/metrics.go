package endpoint

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts GraphQL operations for Prometheus.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	revision prometheus.Gauge
	readTx   prometheus.Histogram
	readErrs prometheus.Counter
	// access counts the refusals of access control alone, by reason
	// (unauthenticated, forbidden), beside their count among all refusals.
	access   *prometheus.CounterVec
	refusals *prometheus.CounterVec

	mu    sync.Mutex
	names map[string]bool
}

// maxOperationNames bounds the distinct operation labels: names are chosen by
// clients, and an unbounded label would let them grow the metrics forever.
const maxOperationNames = 100

// NewMetrics makes the endpoint's metrics; the server registers them
// (Collectors) with the others.
func NewMetrics() *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowsnap_graphql_operations_total", Help: "GraphQL operations by operation name and outcome (ok or the first error's code)."}, []string{"operation", "outcome"}),
		latency:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flowsnap_graphql_operation_duration_seconds", Help: "Time from the start of an operation to its complete response.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"operation"}),
		revision: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flowsnap_position_revision", Help: "The store revision the latest operation read at."}),
		readTx:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flowsnap_read_transaction_seconds", Help: "How long read transactions stayed open.", Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)}),
		readErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: "flowsnap_read_transaction_rollback_errors_total", Help: "Read transactions whose rollback failed."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowsnap_graphql_refused_requests_total", Help: "Requests to /graphql refused or failed, by the first reason: transport, size, parse, validation, depth, complexity, timeout, store, decode, subscriptions, input, internal, unauthenticated, forbidden (scrapes of /metrics without a valid credential count as unauthenticated)."}, []string{"reason"}),
		access:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowsnap_refusals_total", Help: "Refusals of access control, by reason: unauthenticated (no or no valid credential, on /graphql, its streams or /metrics) and forbidden (a payload field without the payloads permission). Each is also counted in flowsnap_graphql_refused_requests_total."}, []string{"reason"}),
		names:    map[string]bool{},
	}
	for _, reason := range accessReasons {
		m.access.WithLabelValues(reason)
	}
	return m
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.latency, m.revision, m.readTx, m.readErrs, m.refusals, m.access}
}

// accessReasons are the reasons of access control's refusals.
var accessReasons = []string{"unauthenticated", "forbidden"}

// refuse counts a refusal by reason, and among access control's when it
// is one of them.
func (m *Metrics) refuse(reason string) {
	m.refusals.WithLabelValues(reason).Inc()
	if slices.Contains(accessReasons, reason) {
		m.access.WithLabelValues(reason).Inc()
	}
}

// Refused counts a request refused outside /graphql by reason (an
// unauthenticated scrape of /metrics).
func (m *Metrics) Refused(reason string) {
	m.refuse(reason)
}

// ObserveRead records one read transaction; it fits snapshot.Reader.OnRead.
func (m *Metrics) ObserveRead(open time.Duration, err error) {
	m.readTx.Observe(open.Seconds())
	if err != nil {
		m.readErrs.Inc()
	}
}

func (m *Metrics) observe(name, outcome string, elapsed time.Duration) {
	name = m.label(name)
	m.requests.WithLabelValues(name, outcome).Inc()
	m.latency.WithLabelValues(name).Observe(elapsed.Seconds())
}

func (m *Metrics) label(name string) string {
	if name == "" {
		return "anonymous"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names[name] {
		return name
	}
	if len(m.names) >= maxOperationNames {
		return "other"
	}
	m.names[name] = true
	return name
}
