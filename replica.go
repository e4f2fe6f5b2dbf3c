package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
	// maxLag is --max-replica-lag as given (parseMaxLag).
	maxLag string
}

// parseMaxLag reads --max-replica-lag: a count of revisions, a duration,
// or both, comma-separated; off (or 0) for no bound.
func parseMaxLag(v string) (snapshot.MaxLag, error) {
	var m snapshot.MaxLag
	bad := func() (snapshot.MaxLag, error) {
		return snapshot.MaxLag{}, fmt.Errorf("--max-replica-lag %q: want revisions (1000), a duration (5s), both (1000,5s), or off", v)
	}
	if t := strings.TrimSpace(v); t == "off" || t == "0" {
		return m, nil
	}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			if n <= 0 || m.Revisions != 0 {
				return bad()
			}
			m.Revisions = n
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 || m.Time != 0 {
			return bad()
		}
		m.Time = d
	}
	return m, nil
}

func formatMaxLag(m snapshot.MaxLag) string {
	var parts []string
	if m.Revisions > 0 {
		parts = append(parts, strconv.FormatInt(m.Revisions, 10))
	}
	if m.Time > 0 {
		parts = append(parts, m.Time.String())
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
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
	maxLag, err := parseMaxLag(ro.maxLag)
	if err != nil {
		closeAll()
		return nil, err
	}
	err = reader.UseReplicas(ctx, dbs, snapshot.ReplicaOptions{
		StaleWait: ro.staleWait, StaleFromPrimary: ro.staleFromPrimary, CheckInterval: ro.checkInterval,
		MaxLag: maxLag,
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
	replicaLagTimeDesc  = prometheus.NewDesc("flowsnap_replica_lag_seconds", "How long ago the primary was first seen at a revision the replica has not reached (0 when it has, or when unknown).", []string{"replica"}, nil)
)

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaHealthyDesc
	ch <- replicaRevisionDesc
	ch <- replicaLagDesc
	ch <- replicaLagTimeDesc
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
		ch <- prometheus.MustNewConstMetric(replicaLagTimeDesc, prometheus.GaugeValue, st.LagTime.Seconds(), name)
	}
}
