// Package stats exports the workflow metrics (docs/contract.md#workflow-metrics):
// runs by status and flow, stale running runs, the oldest pending run,
// overdue waits and the store's revision, read from the store by one
// Collector per server.
//
// The Collector refreshes lazily, when it is scraped and its last attempt
// is older than the interval, rather than on a ticker of its own: a server
// nobody scrapes reads nothing, any number of scrapers (two Prometheus
// servers of a pair, a curl) cost one read per interval, and a scrape sees
// figures read as late as the interval allows. A scrape that finds a
// refresh due waits for it; the refresh's cost is measured
// (BenchmarkRefresh) and bounded by Options.Timeout.
//
// Each refresh is one read transaction at one position
// (snapshot.Reader.WorkflowStats), begun and ended within the refresh: no
// read is held between refreshes. A refresh that fails withdraws the
// workflow gauges until one succeeds, rather than serving what an earlier
// read saw as if it were current; flowsnap_stats_refresh_timestamp_seconds
// always says when the figures served were read.
package stats

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// The defaults of Options.
const (
	DefaultInterval   = 15 * time.Second
	DefaultMaxFlows   = 50
	DefaultStaleAfter = 5 * time.Minute
	DefaultTimeout    = 10 * time.Second
)

// Other is the flow label of every flow past Options.MaxFlows.
const Other = "other"

// Options configure a Collector.
type Options struct {
	// Interval is the least time between two refreshes (0: every scrape).
	Interval time.Duration
	// MaxFlows is how many flows get a label of their own: those with the
	// most runs, ties by name. The rest are counted as flow="other".
	MaxFlows int
	// StaleAfter: a running run whose heartbeat is older is stale.
	StaleAfter time.Duration
	// Timeout bounds one refresh.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives failed refreshes; nil discards.
	Logger *slog.Logger
}

// Collector is the workflow metrics of one server, a prometheus.Collector.
// It is safe for concurrent use.
type Collector struct {
	reader *snapshot.Reader
	opts   Options

	duration prometheus.Histogram
	errors   prometheus.Counter

	mu sync.Mutex
	// attempted is when the last refresh began, failed or not.
	attempted time.Time
	// last is the last successful refresh's figures; ok says they are
	// served (the refresh after them has not failed).
	last figures
	ok   bool
	// revision and moved say when the store's revision was last seen to
	// change.
	revision int64
	moved    time.Time
	seen     bool
}

// figures are what one refresh read, folded.
type figures struct {
	read     time.Time
	revision int64
	moved    time.Time
	flows    map[string]*snapshot.FlowStats
}

var (
	runsDesc          = prometheus.NewDesc("flowsnap_runs", "Live runs by status and flow (flows past --stats-max-flows as flow=\"other\").", []string{"status", "flow"}, nil)
	staleDesc         = prometheus.NewDesc("flowsnap_runs_stale", "Running runs whose heartbeat is older than --stale-after, by flow.", []string{"flow"}, nil)
	oldestPendingDesc = prometheus.NewDesc("flowsnap_oldest_pending_run_age_seconds", "Age of the oldest pending run, by flow (flows with a pending run only).", []string{"flow"}, nil)
	overdueDesc       = prometheus.NewDesc("flowsnap_overdue_waits", "Wait steps still waiting past their timeout, by their run's flow.", []string{"flow"}, nil)
	revisionDesc      = prometheus.NewDesc("flowsnap_store_revision", "The store's revision at the last refresh.", nil, nil)
	revisionAgeDesc   = prometheus.NewDesc("flowsnap_store_revision_age_seconds", "Time from when this server first saw the store's revision to the last refresh: how long the store has not moved.", nil, nil)
	timestampDesc     = prometheus.NewDesc("flowsnap_stats_refresh_timestamp_seconds", "When the workflow metrics served were read (Unix seconds); 0 before the first successful refresh.", nil, nil)
)

// New returns the collector of reader's store; register it with a
// prometheus.Registerer. Zero Options fields take the defaults, except
// Interval, where 0 means every scrape; a negative Interval takes the
// default.
func New(reader *snapshot.Reader, opts Options) *Collector {
	if opts.Interval < 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxFlows <= 0 {
		opts.MaxFlows = DefaultMaxFlows
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{
		reader: reader,
		opts:   opts,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "flowsnap_stats_refresh_duration_seconds",
			Help:    "How long one refresh of the workflow metrics (one read of the store) took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flowsnap_stats_refresh_errors_total",
			Help: "Refreshes of the workflow metrics that failed; the workflow gauges are withdrawn until one succeeds.",
		}),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runsDesc, staleDesc, oldestPendingDesc, overdueDesc, revisionDesc, revisionAgeDesc, timestampDesc} {
		ch <- d
	}
	c.duration.Describe(ch)
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector: it refreshes when the last
// attempt is older than the interval, then sends what the last successful
// refresh read, unless a refresh has failed since.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if c.attempted.IsZero() || c.opts.Now().Sub(c.attempted) >= c.opts.Interval {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
		c.refreshLocked(ctx)
		cancel()
	}
	f, ok := c.last, c.ok
	c.mu.Unlock()

	c.duration.Collect(ch)
	c.errors.Collect(ch)
	read := 0.0
	if !f.read.IsZero() {
		read = float64(f.read.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(timestampDesc, prometheus.GaugeValue, read)
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(revisionDesc, prometheus.GaugeValue, float64(f.revision))
	ch <- prometheus.MustNewConstMetric(revisionAgeDesc, prometheus.GaugeValue, f.read.Sub(f.moved).Seconds())
	for flow, s := range f.flows {
		// A label value must be UTF-8; a flow name is JSON text, so this
		// changes nothing the store's CHECK admits.
		flow = strings.ToValidUTF8(flow, "\uFFFD")
		for _, st := range vocab.Statuses {
			ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(s.Runs[st]), string(st), flow)
		}
		ch <- prometheus.MustNewConstMetric(staleDesc, prometheus.GaugeValue, float64(s.Stale), flow)
		ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(s.OverdueWaits), flow)
		if s.HasPending {
			age := max(0, float64(f.read.UnixMilli()-s.OldestPendingMs)/1e3)
			ch <- prometheus.MustNewConstMetric(oldestPendingDesc, prometheus.GaugeValue, age, flow)
		}
	}
}

// Refresh reads the store now, whatever the interval says; ctx bounds the
// read. On failure the workflow gauges are withdrawn until a refresh
// succeeds.
func (c *Collector) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refreshLocked(ctx)
}

func (c *Collector) refreshLocked(ctx context.Context) error {
	now := c.opts.Now()
	c.attempted = now
	start := time.Now()
	ctx, rd := c.reader.Begin(ctx)
	ws, err := c.reader.WorkflowStats(ctx, snapshot.StatsRequest{
		StaleBefore: now.Add(-c.opts.StaleAfter).UnixMilli(),
		NowMs:       now.UnixMilli(),
	})
	rd.End()
	c.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		c.errors.Inc()
		c.ok = false
		c.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "workflow metrics: refresh failed", slog.Any("error", err))
		return err
	}
	if !c.seen || ws.Position.Revision != c.revision {
		c.revision, c.moved, c.seen = ws.Position.Revision, now, true
	}
	c.last = figures{read: now, revision: c.revision, moved: c.moved, flows: fold(ws.Flows, c.opts.MaxFlows)}
	c.ok = true
	return nil
}

// fold keeps the max flows with the most runs (ties by name) and adds the
// others up as Other: counts add, the oldest pending run is the oldest. A
// flow named "other" is folded in with them whenever any are.
func fold(flows map[string]*snapshot.FlowStats, max int) map[string]*snapshot.FlowStats {
	if len(flows) <= max {
		return flows
	}
	type ranked struct {
		name string
		runs int64
	}
	all := make([]ranked, 0, len(flows))
	for name, s := range flows {
		var n int64
		for _, v := range s.Runs {
			n += v
		}
		all = append(all, ranked{name, n})
	}
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.runs, a.runs), cmp.Compare(a.name, b.name))
	})
	out := make(map[string]*snapshot.FlowStats, max+1)
	other := &snapshot.FlowStats{Runs: map[vocab.Status]int64{}}
	for i, r := range all {
		s := flows[r.name]
		if i < max && r.name != Other {
			out[r.name] = s
			continue
		}
		for st, v := range s.Runs {
			other.Runs[st] += v
		}
		other.Stale += s.Stale
		other.OverdueWaits += s.OverdueWaits
		if s.HasPending && (!other.HasPending || s.OldestPendingMs < other.OldestPendingMs) {
			other.OldestPendingMs, other.HasPending = s.OldestPendingMs, true
		}
	}
	out[Other] = other
	return out
}
