package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
)

// replicaOptions are serve's flags of docs/contract.md#replicas: where reads go, and how
// long a read waits for a replica that lags.
type replicaOptions struct {
	dsns             []string
	staleWait        time.Duration
	staleFromPrimary bool
	checkInterval    time.Duration
	pgExecMode       string
}

// openReplicas opens the replicas read-only, without waiting for them to
// answer (one that is down is read once it is up), and makes reader read
// from them. The caller closes what it returns and runs
// reader.WatchReplicas.
func openReplicas(ctx context.Context, reader *snapshot.Reader, opts serveOptions) ([]*store.DB, error) {
	ro := opts.replica
	ro.dsns = slices.DeleteFunc(ro.dsns, func(dsn string) bool { return strings.TrimSpace(dsn) == "" })
	for i := range ro.dsns {
		ro.dsns[i] = strings.TrimSpace(ro.dsns[i])
	}
	if len(ro.dsns) == 0 {
		return nil, nil
	}
	if !reader.DB().HasStandbys() {
		return nil, fmt.Errorf("--replica needs a PostgreSQL --db; %s has no replicas", reader.DB())
	}
	var dbs []*store.DB
	closeAll := func() {
		for _, db := range dbs {
			db.Close()
		}
	}
	for i, dsn := range ro.dsns {
		if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
			closeAll()
			return nil, fmt.Errorf("--replica %d is not a postgres:// URL", i+1)
		}
		db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, MaxReaders: opts.maxReaders, PGExecMode: ro.pgExecMode, Lazy: true,
			TracerProvider: opts.tracing.Provider})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("replica %d: %w", i+1, err)
		}
		dbs = append(dbs, db)
	}
	err := reader.UseReplicas(ctx, dbs, snapshot.ReplicaOptions{
		StaleWait: ro.staleWait, StaleFromPrimary: ro.staleFromPrimary, CheckInterval: ro.checkInterval,
	})
	if err != nil {
		closeAll()
		return nil, err
	}
	return dbs, nil
}

func closeReplicas(dbs []*store.DB) {
	for _, db := range dbs {
		db.Close()
	}
}

// replicaReport is /readyz's line per replica: health, revision and lag.
func replicaReport(reader *snapshot.Reader) string {
	var b strings.Builder
	for i, st := range reader.Replicas() {
		if st.Healthy {
			fmt.Fprintf(&b, "replica %d (%s): healthy, revision %d, lag %d revisions\n", i+1, st.Name, st.Revision, st.Lag)
		} else {
			fmt.Fprintf(&b, "replica %d (%s): unhealthy: %s\n", i+1, st.Name, st.Problem)
		}
	}
	return b.String()
}

// replicaCollector exports each replica's health and lag to Prometheus, as
// the last check saw them.
type replicaCollector struct{ reader *snapshot.Reader }

var (
	replicaHealthyDesc  = prometheus.NewDesc("flowsnap_replica_healthy", "1 when reads may go to the replica, else 0.", []string{"replica"}, nil)
	replicaRevisionDesc = prometheus.NewDesc("flowsnap_replica_revision", "The store revision the replica was last seen at.", []string{"replica"}, nil)
	replicaLagDesc      = prometheus.NewDesc("flowsnap_replica_lag_revisions", "The primary's revision minus the replica's (-1 when unknown).", []string{"replica"}, nil)
)

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaHealthyDesc
	ch <- replicaRevisionDesc
	ch <- replicaLagDesc
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	for i, st := range c.reader.Replicas() {
		name := fmt.Sprintf("%d", i+1)
		healthy := 0.0
		if st.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(replicaHealthyDesc, prometheus.GaugeValue, healthy, name)
		ch <- prometheus.MustNewConstMetric(replicaRevisionDesc, prometheus.GaugeValue, float64(st.Revision), name)
		ch <- prometheus.MustNewConstMetric(replicaLagDesc, prometheus.GaugeValue, float64(st.Lag), name)
	}
}
