package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/flowsnap/flowsnap/snapshot"
)

// newRegistry registers every metric /metrics serves, in one place: the Go
// runtime's and the process's, and each component's own, which it declares
// beside the code it measures (endpoint.Metrics, live.Metrics, httpMetrics,
// the run cache's and the replicas' below).
func newRegistry(sets ...[]prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, set := range sets {
		reg.MustRegister(set...)
	}
	return reg
}

// runCacheCollectors export what the reader's run cache answered and
// missed, and the bytes it holds.
func runCacheCollectors(reader *snapshot.Reader) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flowsnap_run_cache_hits_total",
			Help: "Runs of a batch answered from the run cache, read by their revisions alone."},
			func() float64 { hits, _, _ := reader.RunCacheStats(); return float64(hits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "flowsnap_run_cache_misses_total",
			Help: "Live runs of a batch the run cache was asked for and did not hold at their revision."},
			func() float64 { _, misses, _ := reader.RunCacheStats(); return float64(misses) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flowsnap_run_cache_bytes",
			Help: "About how much memory the runs in the run cache hold."},
			func() float64 { _, _, bytes := reader.RunCacheStats(); return float64(bytes) }),
	}
}
