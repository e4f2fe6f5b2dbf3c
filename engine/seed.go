package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// DefaultSeedNow is the "now" of a seed that names none,
// 2026-11-01T00:00:00Z in ms: a fixed instant, so that the same seed gives
// the same store whenever it runs.
const DefaultSeedNow int64 = 1793491200000

// SeedOptions tune Seed.
type SeedOptions struct {
	// Runs is how many run ids the history creates, garbage-collected ones
	// included.
	Runs int
	// Seed selects the history: the same Seed, Runs, Now and BatchRuns
	// give the same rows, revisions included (the batch size orders the
	// writes, so it shapes the revisions but nothing else).
	Seed int64
	// Now is the instant the history leads up to, in ms; 0 means
	// DefaultSeedNow. Running runs heartbeat shortly before it, timers wake
	// after it.
	Now int64
	// Progress, when set, receives a line about every second.
	Progress io.Writer
	// BatchRuns is how many runs one transaction writes; 0 means a default
	// tuned per dialect.
	BatchRuns int
}

// SeedStats counts what Seed wrote.
type SeedStats struct {
	// Runs is how many run ids were created; Deleted of them were
	// garbage-collected again and are tombstones.
	Runs, Deleted int
	// ByStatus counts the live runs per status.
	ByStatus map[string]int
	// Edges counts spawn edges, Joins the children with two parents.
	Edges, Joins int
	// MaxChildren is the largest fan-out, MaxRounds the longest lineage.
	MaxChildren, MaxRounds int
	// Suspended runs per waiting reason.
	Waiting map[string]int
	// Journal rows.
	Steps, Attempts, InboundEvents, RunEvents int
	// Transactions is how many write transactions Seed committed.
	Transactions int
	Elapsed      time.Duration
}

// Seed fills an empty engine store with a realistic history of opts.Runs
// runs leading up to opts.Now: mostly finished runs, some running (a few
// with stale heartbeats), pending, claimed and suspended ones waiting for
// every kind of thing, cancellations requested and acknowledged, parents
// with fan-outs up to 10,000 children, lineages of up to 1,000 rounds, joins,
// a journal for every run that started, and garbage-collected runs that
// left tombstones.
//
// The history is a function of opts alone (math/rand/v2 PCG seeded with
// opts.Seed). It is written in batches of runs, one transaction each, with
// multi-row INSERTs; the store's triggers keep revisions as for any writer.
// A store that has ever held a run is refused. ctx cancels the seeding
// between or inside batches; the batches committed so far stay.
func Seed(ctx context.Context, db *store.DB, opts SeedOptions) (SeedStats, error) {
	start := time.Now()
	if opts.Runs < 0 {
		return SeedStats{}, fault.Errorf(fault.BadUserInput, "the number of runs to seed must not be negative")
	}
	if opts.Now == 0 {
		opts.Now = DefaultSeedNow
	}
	if opts.Now < 31*24*3600*1000 || opts.Now > vocab.MaxSafe/2 {
		return SeedStats{}, fault.Errorf(fault.BadUserInput, "the seed's now must be a time in ms after February 1970")
	}
	d := db.Dialect()
	if opts.BatchRuns <= 0 {
		opts.BatchRuns = defaultBatchRuns(d)
	}
	var seen int64
	err := db.Write(ctx, func(tx store.Tx) error {
		return tx.QueryRow(ctx, `SELECT COUNT(*) FROM flows_run_changes`).Scan(&seen)
	})
	if err != nil {
		return SeedStats{}, fault.Wrap(fault.PersistenceFailed, err, "checking that %s is empty", db)
	}
	if seen > 0 {
		return SeedStats{}, fault.Errorf(fault.BadUserInput, "%s already holds runs: seed an empty store", db)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := newSeeder(opts)
	batches := make(chan *seedBatch, 2)
	free := make(chan *seedBatch, 3)
	go func() {
		defer close(batches)
		g.generate(ctx, batches, free)
	}()
	var (
		written   int
		lastPrint = start
		werr      error
	)
	for b := range batches {
		if werr == nil {
			werr = db.Write(ctx, func(tx store.Tx) error { return b.write(ctx, tx, d) })
			if werr != nil {
				werr = fault.Wrap(fault.PersistenceFailed, werr, "seeding runs %d to %d", written, written+b.runs)
				cancel() // the generator stops; the loop drains what it sent
			} else {
				written += b.runs
				g.stats.Transactions++
			}
		}
		if opts.Progress != nil && werr == nil && (time.Since(lastPrint) >= time.Second || written == opts.Runs) {
			lastPrint = time.Now()
			el := time.Since(start).Seconds()
			fmt.Fprintf(opts.Progress, "seed: %d/%d runs, %.0f runs/s\n", written, opts.Runs, float64(written)/max(el, 1e-9))
		}
		b.reset()
		select {
		case free <- b:
		default:
		}
	}
	if werr != nil {
		return g.stats, werr
	}
	if err := ctx.Err(); err != nil {
		return g.stats, fault.Wrap(fault.Timeout, err, "seeding stopped after %d runs", written)
	}
	g.stats.Elapsed = time.Since(start)
	return g.stats, nil
}

// defaultBatchRuns balances commit cost against transaction size. On
// PostgreSQL every row change updates the one flows_run_source row, and the
// versions one transaction leaves of it cannot be pruned before it commits,
// so each change costs more the more came before it in the transaction: a
// transaction must stay short there.
func defaultBatchRuns(d store.Dialect) int {
	if d.CostlyLongWrites() {
		return 200
	}
	return 5000
}

// seedBatch is the rows of one seeding transaction, in the order they are
// written: runs before the edges and journal rows that name them, deletions
// last.
type seedBatch struct {
	runs                                                int
	runRows, edges, steps, attempts, inbound, runEvents bulkTable
	deletes                                             []any
}

func newSeedBatch() *seedBatch {
	return &seedBatch{
		runRows:   bulkTable{head: bulkRunsHead, cols: 24},
		edges:     bulkTable{head: bulkEdgesHead, cols: 3},
		steps:     bulkTable{head: bulkStepsHead, cols: 11},
		attempts:  bulkTable{head: bulkAttemptsHead, cols: 11},
		inbound:   bulkTable{head: bulkInboundHead, cols: 7},
		runEvents: bulkTable{head: bulkRunEventsHead, cols: 5},
	}
}

func (b *seedBatch) write(ctx context.Context, tx store.Tx, d store.Dialect) error {
	// A seed that a crash cut short is seeded again: waiting for each
	// commit to reach the disk buys nothing but time.
	if err := d.RelaxDurability(ctx, tx); err != nil {
		return err
	}
	for _, t := range []*bulkTable{&b.runRows, &b.edges, &b.steps, &b.attempts, &b.inbound, &b.runEvents} {
		if err := t.insert(ctx, tx, d); err != nil {
			return err
		}
	}
	return deleteRuns(ctx, tx, d, b.deletes)
}

func (b *seedBatch) reset() {
	b.runs = 0
	for _, t := range []*bulkTable{&b.runRows, &b.edges, &b.steps, &b.attempts, &b.inbound, &b.runEvents} {
		clear(t.args) // let the collector have the strings
		t.args = t.args[:0]
	}
	clear(b.deletes)
	b.deletes = b.deletes[:0]
}

// ---- The history ----

const (
	second = int64(1000)
	minute = 60 * second
	hour   = 60 * minute
	day    = 24 * hour
)

// flowSpec is a flow of the demo history and the names of its steps.
type flowSpec struct {
	name  string
	steps []string
}

var (
	plainFlows = []flowSpec{
		{"order-fulfillment", []string{"reserve-inventory", "charge-payment", "create-shipment", "notify-customer"}},
		{"invoice-sync", []string{"fetch-invoices", "map-accounts", "post-ledger"}},
		{"user-onboarding", []string{"create-account", "send-welcome-email", "provision-workspace"}},
		{"nightly-report", []string{"query-warehouse", "render-pdf", "email-report"}},
		{"fraud-check", []string{"score-transaction", "call-risk-api", "record-verdict"}},
		{"subscription-renewal", []string{"load-plan", "charge-card", "extend-period"}},
		{"data-export", []string{"snapshot-table", "compress", "upload-archive"}},
	}
	// parentFlows spawn children of the flow beside them.
	parentFlows = []struct{ parent, child flowSpec }{
		{flowSpec{"batch-import", []string{"list-records", "spawn-imports", "collect-results"}},
			flowSpec{"import-record", []string{"parse-record", "upsert-record"}}},
		{flowSpec{"notify-fan-out", []string{"load-audience", "spawn-notifications", "summarize"}},
			flowSpec{"send-notification", []string{"render-message", "deliver"}}},
		{flowSpec{"etl-backfill", []string{"plan-partitions", "spawn-backfills", "verify-totals"}},
			flowSpec{"backfill-partition", []string{"extract", "transform", "load"}}},
		{flowSpec{"media-pipeline", []string{"ingest-upload", "spawn-transcodes", "publish"}},
			flowSpec{"video-transcode", []string{"probe-media", "transcode", "upload-rendition"}}},
	}
	// lineageFlows continue as new rounds, carrying a cursor forward.
	lineageFlows = []flowSpec{
		{"inventory-poller", []string{"poll-suppliers", "apply-changes"}},
		{"billing-cycle", []string{"close-period", "issue-invoices"}},
		{"site-crawler", []string{"fetch-frontier", "crawl-pages"}},
	}
	joinFlow          = flowSpec{"reconcile-accounts", []string{"load-left", "load-right", "diff", "write-report"}}
	seedHosts         = []string{"worker-a1", "worker-a2", "worker-b1", "worker-b2", "worker-c1", "worker-c2", "worker-d1", "worker-d2"}
	seedEvents        = []string{"payment.settled", "document.signed", "shipment.delivered", "webhook.received", "export.ready"}
	seedCancelReasons = []string{"requested by operator", "superseded by a newer deploy", "parent cancelled", "customer withdrew the order"}
	seedFailures      = []struct{ name, message string }{
		{"TimeoutError", "upstream did not answer within 30s"},
		{"HTTPError", "502 Bad Gateway from payments.internal"},
		{"ValidationError", "record 4411 has no customer id"},
		{"QuotaExceeded", "rate limit of 100 requests/min reached"},
		{"", "connection reset by peer"},
	}
	seedOtherReasons = []string{"children", "rate-limited by upstream", "awaiting manual review of export", "maintenance window"}
)

// seeder generates the history as a stream of batches. It owns the random
// source, so the history depends on nothing but the options.
type seeder struct {
	r         *rand.Rand
	now       int64
	total     int
	next      int
	width     int
	batchRuns int
	fanMax    int
	roundsMax int
	b         *seedBatch
	stats     SeedStats
}

func newSeeder(opts SeedOptions) *seeder {
	return &seeder{
		r:         rand.New(rand.NewPCG(uint64(opts.Seed), 0x666c6f77736e6170)),
		now:       opts.Now,
		total:     opts.Runs,
		width:     max(7, len(strconv.Itoa(opts.Runs))),
		batchRuns: opts.BatchRuns,
		// The largest fan-out and lineage grow with the history: at 20,000
		// runs a parent with over 1,000 children (a few of which the engine
		// may have collected) and a lineage of over 100 rounds.
		fanMax:    clamp(opts.Runs/19, 1, 10000),
		roundsMax: clamp(opts.Runs/190, 1, 1000),
		stats:     SeedStats{ByStatus: map[string]int{}, Waiting: map[string]int{}},
	}
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }

// generate sends the history batch by batch until it is complete or ctx is
// done.
func (g *seeder) generate(ctx context.Context, out chan<- *seedBatch, free chan *seedBatch) {
	g.b = newSeedBatch()
	send := func() bool {
		select {
		case out <- g.b:
		case <-ctx.Done():
			return false
		}
		select {
		case g.b = <-free:
		default:
			g.b = newSeedBatch()
		}
		return true
	}
	// The two largest families sit a third and two thirds of the way in.
	bigFan, bigLineage := g.total/3, 2*g.total/3
	for g.next < g.total {
		if ctx.Err() != nil {
			return
		}
		switch {
		case bigFan >= 0 && g.next >= bigFan:
			bigFan = -1
			g.fanOut(g.fanMax)
		case bigLineage >= 0 && g.next >= bigLineage:
			bigLineage = -1
			g.lineage(g.roundsMax)
		default:
			g.family()
		}
		if g.b.runs >= g.batchRuns && !send() {
			return
		}
	}
	if g.b.runs > 0 || len(g.b.deletes) > 0 {
		send()
	}
}

// left is how many runs the history may still create.
func (g *seeder) left() int { return g.total - g.next }

// family adds one family of runs, its kind drawn by weight.
func (g *seeder) family() {
	switch w := g.r.IntN(100); {
	case w < 62:
		g.single()
	case w < 76:
		g.fanOut(2 + g.r.IntN(11))
	case w < 77:
		g.fanOut(13 + g.r.IntN(max(1, g.fanMax/10)))
	case w < 88:
		g.lineage(2 + g.r.IntN(7))
	case w < 89:
		g.lineage(9 + g.r.IntN(max(1, g.roundsMax/5)))
	case w < 96:
		g.tree()
	default:
		g.join()
	}
}

// run is one run of the history, with what its row and journal need.
type run struct {
	id, flow           string
	status             vocab.Status
	spec               flowSpec
	created, started   int64
	finished, pausedAt int64
	owner              vocab.Owner
	heartbeat          int64
	claim              vocab.Owner
	claimedAt          int64
	parent, execParent string
	lineage            string
	ordinal            int64
	cancelReq          int64
	ack                string
	waitReason         string
	wakeAt             int64
	token, request     string
	state              string
	steps              int
	evSeq              int64
	attempt            int
	event              int
}

// single adds a run of its own, sometimes garbage-collected afterwards.
func (g *seeder) single() {
	status := g.pickStatus()
	spec := plainFlows[g.r.IntN(len(plainFlows))]
	r := g.newRun(spec, status, g.familyTime(!finished(status)))
	g.emit(r)
	// Old finished runs get garbage-collected by the engine.
	if finished(status) && r.finished < g.now-7*day && g.r.IntN(100) < 12 {
		g.gc(r)
	}
}

// fanOut adds a parent with up to n children.
func (g *seeder) fanOut(n int) {
	pf := parentFlows[g.r.IntN(len(parentFlows))]
	parent := g.newRun(pf.parent, g.pickParentStatus(), g.familyTime(g.r.IntN(100) < 25))
	g.emit(parent)
	n = min(n, g.left())
	g.stats.MaxChildren = max(g.stats.MaxChildren, n)
	for seq := range n {
		g.child(pf.child, parent, int64(seq))
	}
}

// child adds a child of parent at position seq.
func (g *seeder) child(spec flowSpec, parent *run, seq int64) *run {
	at := min(g.now, max(parent.started, parent.created)+int64(seq)*7+g.r.Int64N(2*second))
	c := g.newRun(spec, g.childStatus(parent.status), at)
	c.parent, c.execParent = parent.id, parent.id
	g.emit(c)
	g.edge(parent.id, c.id, seq)
	// Engines garbage-collect some finished children of finished parents.
	if finished(parent.status) && finished(c.status) && g.r.IntN(1000) < 5 {
		g.gc(c)
	}
	return c
}

// lineage adds a run continued as up to n rounds: every round but the last
// completed, each created when the previous one finished.
func (g *seeder) lineage(n int) {
	n = min(n, g.left())
	spec := lineageFlows[g.r.IntN(len(lineageFlows))]
	last := g.pickStatus()
	// Rounds of a long lineage are spaced so the whole fits before now.
	start := g.familyTime(!finished(last))
	gap := max(second, min(10*minute, (g.now-start)/int64(n+1)))
	var prev, first *run
	at := start
	for i := range n {
		status := vocab.StatusCompleted
		if i == n-1 {
			status = last
		}
		r := g.newRunSpan(spec, status, at, gap/2)
		if i > 0 {
			r.parent, r.execParent = prev.id, prev.id
			r.lineage, r.ordinal = first.id, int64(i)
		} else {
			first = r
		}
		g.emit(r)
		prev = r
		at = min(g.now, max(at+gap, r.finished))
	}
	g.stats.MaxRounds = max(g.stats.MaxRounds, n)
}

// tree adds a parent whose children have children of their own.
func (g *seeder) tree() {
	pf := parentFlows[g.r.IntN(len(parentFlows))]
	root := g.newRun(pf.parent, g.pickParentStatus(), g.familyTime(g.r.IntN(100) < 25))
	g.emit(root)
	for seq := range int64(2 + g.r.IntN(3)) {
		if g.left() == 0 {
			return
		}
		mid := g.child(pf.child, root, seq)
		if mid.status == vocab.StatusPending || mid.started == 0 {
			continue
		}
		for s2 := range int64(g.r.IntN(4)) {
			if g.left() == 0 {
				return
			}
			g.child(pf.child, mid, s2)
		}
	}
}

// join adds two parents and a child spawned by both: its parent_run_id is
// null and its effective parent is the earliest edge.
func (g *seeder) join() {
	if g.left() < 3 {
		g.single()
		return
	}
	active := g.r.IntN(100) < 25
	at := g.familyTime(active)
	status := g.pickParentStatus()
	left := g.newRun(joinFlow, status, at)
	g.emit(left)
	right := g.newRun(joinFlow, status, at+g.r.Int64N(minute))
	g.emit(right)
	seqs := [2]int64{}
	for i, p := range []*run{left, right} {
		for range g.r.IntN(3) {
			if g.left() <= 1 {
				break
			}
			g.child(joinFlow, p, seqs[i])
			seqs[i]++
		}
	}
	j := g.newRun(joinFlow, g.childStatus(status), min(g.now, max(left.started, right.started, at)+g.r.Int64N(second)))
	// No parent_run_id and, until its edges are in, no effective parent:
	// the store derives it from the earliest edge by (seq, parent id).
	g.emit(j)
	g.edge(left.id, j.id, seqs[0])
	g.edge(right.id, j.id, seqs[1])
	g.stats.Joins++
}

// ---- One run ----

// familyTime is when a family starts: within the last six hours for a
// family still at work, within the last thirty days otherwise.
func (g *seeder) familyTime(active bool) int64 {
	if active {
		return g.now - 2*minute - g.r.Int64N(6*hour)
	}
	return g.now - 6*hour - g.r.Int64N(30*day-6*hour)
}

func finished(status vocab.Status) bool { return status.Finished() }

// statusMix is a distribution of statuses: each status with the bound,
// out of 100, below which a draw picks it, in rising order, the last 100.
type statusMix []struct {
	below  int
	status vocab.Status
}

// pick draws a status from m.
func (g *seeder) pick(m statusMix) vocab.Status {
	w := g.r.IntN(100)
	for _, e := range m {
		if w < e.below {
			return e.status
		}
	}
	return m[len(m)-1].status
}

// The mixes the history is drawn from: a parent never pends (it ran to
// spawn its children), and a child follows its parent, a finished parent's
// children having finished.
var (
	rootMix = statusMix{{66, vocab.StatusCompleted}, {75, vocab.StatusFailed}, {80, vocab.StatusCancelled},
		{88, vocab.StatusRunning}, {96, vocab.StatusSuspended}, {100, vocab.StatusPending}}
	parentMix = statusMix{{62, vocab.StatusCompleted}, {70, vocab.StatusFailed}, {75, vocab.StatusCancelled},
		{85, vocab.StatusRunning}, {100, vocab.StatusSuspended}}
	childMix = map[vocab.Status]statusMix{
		vocab.StatusCompleted: {{95, vocab.StatusCompleted}, {98, vocab.StatusFailed}, {100, vocab.StatusCancelled}},
		vocab.StatusFailed:    {{70, vocab.StatusCompleted}, {95, vocab.StatusFailed}, {100, vocab.StatusCancelled}},
		vocab.StatusCancelled: {{50, vocab.StatusCompleted}, {100, vocab.StatusCancelled}},
	}
	// childOfLiveMix is the mix of an unfinished parent's children.
	childOfLiveMix = statusMix{{50, vocab.StatusCompleted}, {65, vocab.StatusRunning}, {80, vocab.StatusPending},
		{90, vocab.StatusSuspended}, {97, vocab.StatusFailed}, {100, vocab.StatusCancelled}}
)

func (g *seeder) pickStatus() vocab.Status       { return g.pick(rootMix) }
func (g *seeder) pickParentStatus() vocab.Status { return g.pick(parentMix) }

func (g *seeder) childStatus(parent vocab.Status) vocab.Status {
	if m, ok := childMix[parent]; ok {
		return g.pick(m)
	}
	return g.pick(childOfLiveMix)
}

// newRun makes the next run, created at created, with status and
// everything that goes with it: times, owner, claim, waiting, cancellation.
func (g *seeder) newRun(spec flowSpec, status vocab.Status, created int64) *run {
	return g.newRunSpan(spec, status, created, 10*minute)
}

// newRunSpan is newRun for a run that finishes within span of its creation.
func (g *seeder) newRunSpan(spec flowSpec, status vocab.Status, created, span int64) *run {
	r := &run{id: g.runID(g.next), flow: spec.name, spec: spec, status: status, created: created}
	g.next++
	now := g.now
	if status != vocab.StatusPending && !(status == vocab.StatusCancelled && g.r.IntN(4) == 0) {
		r.started = min(now, created+10+g.r.Int64N(3*second))
	}
	switch status {
	case vocab.StatusPending:
		if g.r.IntN(100) < 40 {
			r.claim, r.claimedAt = g.owner(), min(now, created+g.r.Int64N(2*second))
		}
		if g.r.IntN(100) < 3 {
			r.cancelReq = min(now, created+g.r.Int64N(minute))
		}
	case vocab.StatusRunning:
		r.owner = g.owner()
		if g.r.IntN(100) < 15 {
			// A worker that stopped heartbeating: its run looks alive but is not.
			r.heartbeat = now - 2*minute - g.r.Int64N(4*hour)
		} else {
			r.heartbeat = now - g.r.Int64N(20*second)
		}
		r.heartbeat = max(r.heartbeat, r.started)
		if g.r.IntN(2) == 0 {
			r.claim, r.claimedAt = r.owner, max(created, r.started-g.r.Int64N(second))
		}
		switch w := g.r.IntN(100); {
		case w < 5:
			r.cancelReq = r.started + (now-r.started)/2
		case w < 9:
			r.cancelReq = r.started + (now-r.started)/2
			r.ack = g.ackJSON(r.cancelReq+(now-r.cancelReq)/3, r.owner)
		}
	case vocab.StatusSuspended:
		r.pausedAt = r.started + (now-r.started)*int64(1+g.r.IntN(9))/10
		g.waiting(r)
		if g.r.IntN(100) < 10 {
			r.claim, r.claimedAt = g.owner(), r.pausedAt+(now-r.pausedAt)/2
		}
		if g.r.IntN(100) < 4 {
			r.cancelReq = r.pausedAt + (now-r.pausedAt)/3
		}
	default:
		from := max(r.started, created)
		r.finished = min(now-1, from+g.duration(span))
		r.finished = max(r.finished, from)
		switch {
		case status == vocab.StatusCancelled:
			r.cancelReq = from + (r.finished-from)/2
			if r.started != 0 && g.r.IntN(4) != 0 {
				r.ack = g.ackJSON(r.cancelReq+(r.finished-r.cancelReq)/2, g.owner())
			}
		case status == vocab.StatusCompleted && g.r.IntN(100) == 0:
			// The request came too late: the run had already finished its work.
			r.cancelReq = from + (r.finished-from)*9/10
			r.ack = g.ackJSON(r.finished, g.owner())
		}
	}
	r.state = g.state(r)
	return r
}

// duration is how long a run or step takes: from 200ms to span, most short.
func (g *seeder) duration(span int64) int64 {
	lo, hi := math.Log(200), math.Log(float64(max(span, 201)))
	return int64(math.Exp(lo + g.r.Float64()*(hi-lo)))
}

func (g *seeder) runID(i int) string {
	return fmt.Sprintf("run-%0*d", g.width, i)
}

func (g *seeder) owner() vocab.Owner {
	return vocab.Owner{
		HostID: seedHosts[g.r.IntN(len(seedHosts))],
		PID:    1000 + g.r.Int64N(60000),
		Nonce:  fmt.Sprintf("%016x", g.r.Uint64()),
	}
}

func (g *seeder) ackJSON(at int64, o vocab.Owner) string {
	return fmt.Sprintf(`{"observedAtMs":%d,"owner":{"hostId":%q,"pid":%d,"nonce":%q}}`, at, o.HostID, o.PID, o.Nonce)
}

// waiting sets what a suspended run waits for, each kind with what it
// carries: a wake time, a secret token, a request for whoever resumes it.
func (g *seeder) waiting(r *run) {
	token := func() string { return fmt.Sprintf("wt_%016x%016x", g.r.Uint64(), g.r.Uint64()) }
	now := g.now
	switch w := g.r.IntN(100); {
	case w < 22:
		r.waitReason, r.wakeAt = "timer", now+minute+g.r.Int64N(2*day)
	case w < 36:
		ev := seedEvents[g.r.IntN(len(seedEvents))]
		r.waitReason, r.token = "event", token()
		r.request = fmt.Sprintf(`{"eventName":%q,"correlationId":"c-%08x"}`, ev, g.r.Uint32())
		if g.r.IntN(2) == 0 {
			r.wakeAt = now + hour + g.r.Int64N(3*day)
		}
	case w < 45:
		r.waitReason, r.token = "signal", token()
		r.request = `{"signal":"resume"}`
	case w < 60:
		r.waitReason, r.token = "approval", token()
		r.request = fmt.Sprintf(`{"approvers":["finance-leads"],"summary":"Refund of %d.%02d EUR","amountCents":%d}`,
			g.r.IntN(5000), g.r.IntN(100), g.r.IntN(500000))
		if g.r.IntN(100) < 40 {
			r.wakeAt = now + day + g.r.Int64N(6*day)
		}
	case w < 70:
		r.waitReason, r.token = "human", token()
		r.request = fmt.Sprintf(`{"form":"address-correction","assignee":"ops-%d@example.com","fields":["street","postcode"]}`, g.r.IntN(20))
	case w < 82:
		r.waitReason, r.wakeAt = "quota", now+5*second+g.r.Int64N(10*minute)
		r.request = fmt.Sprintf(`{"resource":"llm.tokens","retryAfterMs":%d}`, r.wakeAt-now)
	default:
		r.waitReason = seedOtherReasons[g.r.IntN(len(seedOtherReasons))]
		if g.r.IntN(2) == 0 {
			r.request = `{"note":"see runbook"}`
		}
	}
	g.stats.Waiting[r.waitReason]++
}

// state is the run's state_json: flowName, its input, and its output or
// error once it has one.
func (g *seeder) state(r *run) string {
	s := fmt.Sprintf(`{"flowName":%q,"input":{"tenant":"t-%03d","requestId":"req-%08x"}`, r.flow, g.r.IntN(200), g.r.Uint32())
	switch r.status {
	case vocab.StatusCompleted:
		switch g.r.IntN(10) {
		case 0: // the flow returned nothing
		case 1:
			s += `,"output":null`
		default:
			s += fmt.Sprintf(`,"output":{"ok":true,"items":%d}`, g.r.IntN(1000))
		}
	case vocab.StatusFailed:
		f := seedFailures[g.r.IntN(len(seedFailures))]
		if f.name == "" {
			s += fmt.Sprintf(`,"error":{"message":%q}`, f.message)
		} else {
			s += fmt.Sprintf(`,"error":{"name":%q,"message":%q}`, f.name, f.message)
		}
	}
	return s + "}"
}

// emit adds the run's row and journal to the batch.
func (g *seeder) emit(r *run) {
	b := g.b
	var lineage, ordinal any
	if r.lineage != "" {
		lineage, ordinal = r.lineage, r.ordinal
	}
	owner := [3]any{}
	if r.owner.HostID != "" {
		owner = [3]any{r.owner.HostID, r.owner.PID, r.owner.Nonce}
	}
	claim := [3]any{}
	if r.claim.HostID != "" {
		claim = [3]any{r.claim.HostID, r.claim.PID, r.claim.Nonce}
	}
	b.runRows.args = append(b.runRows.args,
		r.id, r.status, r.created, nullable(r.started), nullable(r.finished),
		owner[0], owner[1], owner[2], nullable(r.heartbeat),
		claim[0], claim[1], claim[2], nullable(r.claimedAt),
		r.state, nullable(r.parent), nullable(r.execParent), lineage, ordinal,
		nullable(r.cancelReq), nullable(r.ack),
		nullable(r.waitReason), nullable(r.wakeAt), nullable(r.token), nullable(r.request))
	b.runs++
	g.stats.Runs++
	g.stats.ByStatus[string(r.status)]++
	g.journal(r)
}

func (g *seeder) edge(parent, child string, seq int64) {
	g.b.edges.args = append(g.b.edges.args, parent, child, seq)
	g.stats.Edges++
}

// gc deletes an emitted run again in the same batch: the engine collected it.
func (g *seeder) gc(r *run) {
	g.b.deletes = append(g.b.deletes, r.id)
	g.stats.Deleted++
	g.stats.ByStatus[string(r.status)]--
}

// ---- The journal ----

// step kinds of a journal, besides the opening and the closing step.
const (
	kindRunJSON = iota
	kindRunNull
	kindRunVoid
	kindRetryThenOK
	kindNested
	kindSleepElapsed
	kindWaitSatisfied
	kindWaitTimedOut
	numMiddleKinds
)

// journal writes the run's steps, attempts, inbound events and lifecycle
// log, spread over its life: a few steps of random kinds, then the step
// that shows how the run stands — a result, retries exhausted, an attempt
// in flight, a sleep or a wait not over yet. Most runs are short: every row
// here costs the store a revision, and seeding speed is rows.
func (g *seeder) journal(r *run) {
	g.runEvent(r, vocab.EventCreated, r.created, "")
	if r.started == 0 {
		if g.r.IntN(10) == 0 {
			// Delivered before the run ever started: waiting to be claimed.
			ev := seedEvents[g.r.IntN(len(seedEvents))]
			g.inbound(r, ev, r.created+1, g.payload(ev), 0)
		}
		if r.status == vocab.StatusCancelled {
			g.runEvent(r, vocab.EventCancelled, r.finished, g.cancelReason())
		}
		return
	}
	g.runEvent(r, vocab.EventStarted, r.started, "")
	end := g.now
	switch {
	case r.finished != 0:
		end = r.finished
	case r.status == vocab.StatusSuspended:
		end = r.pausedAt
	}
	var middle int
	switch w := g.r.IntN(100); {
	case w < 50:
	case w < 82:
		middle = 1
	case w < 95:
		middle = 2
	default:
		middle = 3
	}
	slot := max(0, (end-r.started)/int64(middle+1))
	at := r.started
	for range middle {
		g.middleStep(r, g.r.IntN(numMiddleKinds), at, at+slot)
		at += slot
	}
	g.closingStep(r, at, end)
	switch r.status {
	case vocab.StatusCompleted:
		g.runEvent(r, vocab.EventCompleted, r.finished, "")
	case vocab.StatusFailed:
		g.runEvent(r, vocab.EventFailed, r.finished, "")
	case vocab.StatusCancelled:
		g.runEvent(r, vocab.EventCancelled, r.finished, g.cancelReason())
	}
	if g.r.IntN(20) == 0 {
		// A duplicate delivery nobody waits for.
		g.inbound(r, "webhook.received", r.started+1, g.payload("webhook.received"), 0)
	}
}

// payload is an event's payload: mostly an object, sometimes none at all
// ("-", stored as NULL), sometimes JSON null — two things a reader must
// keep apart.
func (g *seeder) payload(ev string) string {
	switch g.r.IntN(10) {
	case 0, 1:
		return "-"
	case 2, 3:
		return "null"
	}
	return fmt.Sprintf(`{"id":"%s-%08x","amountCents":%d}`, ev, g.r.Uint32(), g.r.IntN(100000))
}

func (g *seeder) cancelReason() string {
	if g.r.IntN(5) == 0 {
		return ""
	}
	return seedCancelReasons[g.r.IntN(len(seedCancelReasons))]
}

func (g *seeder) stepID(r *run, kind string) string {
	r.steps++
	name := kind
	if name == "" {
		name = r.spec.steps[(r.steps-1)%len(r.spec.steps)]
	}
	return fmt.Sprintf("%02d-%s", r.steps, name)
}

// middleStep writes one finished step of the given kind within [from, to].
func (g *seeder) middleStep(r *run, kind int, from, to int64) {
	switch kind {
	case kindRunJSON, kindRunNull, kindRunVoid, kindRetryThenOK:
		g.runStep(r, from, to, kind)
	case kindNested:
		id := g.stepID(r, "")
		g.step(r, seedStep{id: id, typ: vocab.StepRun, created: from})
		att := g.attemptID(r)
		children := int64(2 + g.r.IntN(2))
		span := max(0, (to-from)/(children+1))
		for i := range children {
			cid := fmt.Sprintf("%s.%d", id, i+1)
			s := from + span*i
			g.step(r, seedStep{id: cid, typ: vocab.StepRun, created: s, parent: id})
			g.attemptOK(r, cid, s, s+span, `{"chunk":`+strconv.FormatInt(i+1, 10)+`}`)
		}
		g.attemptRow(r, seedAttempt{id: att, step: id, started: from, state: "succeeded", ended: to, resultType: "json", result: `{"chunks":` + strconv.FormatInt(children, 10) + `}`})
	case kindSleepElapsed:
		id := g.stepID(r, "sleep")
		g.step(r, seedStep{id: id, typ: vocab.StepSleep, created: from, state: "elapsed", wake: to, resolved: to})
		g.runEvent(r, vocab.EventPaused, from, "")
		g.runEvent(r, vocab.EventResumed, to, "")
	case kindWaitSatisfied:
		ev := seedEvents[g.r.IntN(len(seedEvents))]
		id := g.stepID(r, "wait-"+ev)
		var timeout int64
		if g.r.IntN(2) == 0 {
			timeout = to + hour
		}
		g.step(r, seedStep{id: id, typ: vocab.StepWait, created: from, state: "satisfied", event: ev, timeout: timeout, resolved: to})
		g.inbound(r, ev, from+(to-from)/2, g.payload(ev), to)
		g.runEvent(r, vocab.EventPaused, from, "")
		g.runEvent(r, vocab.EventResumed, to, "")
	case kindWaitTimedOut:
		ev := seedEvents[g.r.IntN(len(seedEvents))]
		id := g.stepID(r, "wait-"+ev)
		g.step(r, seedStep{id: id, typ: vocab.StepWait, created: from, state: "timed_out", event: ev, timeout: to, resolved: to})
		g.runEvent(r, vocab.EventPaused, from, "")
		g.runEvent(r, vocab.EventResumed, to, "")
	}
}

// runStep writes a run step within [from, to] whose last attempt succeeds.
func (g *seeder) runStep(r *run, from, to int64, kind int) {
	id := g.stepID(r, "")
	var maxAttempts int64
	fails := 0
	if kind == kindRetryThenOK {
		maxAttempts, fails = 5, 1+g.r.IntN(3)
	}
	g.step(r, seedStep{id: id, typ: vocab.StepRun, created: from, maxAttempts: maxAttempts})
	span := max(0, (to-from)/int64(fails+1))
	at := from
	for range fails {
		f := seedFailures[g.r.IntN(len(seedFailures))]
		g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: at, state: "failed", ended: at + span/2, errMsg: f.message, errName: f.name, next: at + span})
		at += span
	}
	result := fmt.Sprintf(`{"ok":true,"count":%d}`, g.r.IntN(100))
	switch kind {
	case kindRunNull:
		result = "null"
	case kindRunVoid:
		result = ""
	}
	g.attemptOK(r, id, at, to, result)
}

// closingStep writes the step that shows how the run stands now.
func (g *seeder) closingStep(r *run, from, to int64) {
	switch r.status {
	case vocab.StatusCompleted:
		kind := kindRunJSON
		switch g.r.IntN(10) {
		case 0:
			kind = kindRunNull
		case 1:
			kind = kindRunVoid
		case 2:
			kind = kindRetryThenOK
		}
		g.runStep(r, from, to, kind)
	case vocab.StatusFailed:
		id := g.stepID(r, "")
		f := seedFailures[g.r.IntN(len(seedFailures))]
		if g.r.IntN(10) < 6 {
			// Retries exhausted: every allowed attempt failed, no next one.
			g.step(r, seedStep{id: id, typ: vocab.StepRun, created: from, maxAttempts: 3})
			span := max(0, (to-from)/3)
			for i := range int64(3) {
				next := from + span*(i+1)
				if i == 2 {
					next = 0
				}
				g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: from + span*i, state: "failed", ended: from + span*i + span/2, errMsg: f.message, errName: f.name, next: next})
			}
		} else {
			g.step(r, seedStep{id: id, typ: vocab.StepRun, created: from, maxAttempts: 1})
			g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: from, state: "failed", ended: to, errMsg: f.message, errName: f.name})
		}
	case vocab.StatusCancelled:
		id := g.stepID(r, "")
		g.step(r, seedStep{id: id, typ: vocab.StepRun, created: from})
		g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: from, state: "failed", ended: to, errMsg: "run cancelled", errName: "CancelledError"})
	case vocab.StatusRunning:
		id := g.stepID(r, "")
		g.step(r, seedStep{id: id, typ: vocab.StepRun, created: from, maxAttempts: 4})
		at := from
		if g.r.IntN(4) == 0 {
			f := seedFailures[g.r.IntN(len(seedFailures))]
			mid := from + (to-from)/2
			g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: at, state: "failed", ended: at + (mid-at)/2, errMsg: f.message, errName: f.name, next: mid})
			at = mid
		}
		g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: at, state: "started"})
	case vocab.StatusSuspended:
		g.runEvent(r, vocab.EventPaused, r.pausedAt, "")
		switch r.waitReason {
		case "timer":
			g.step(r, seedStep{id: g.stepID(r, "sleep"), typ: vocab.StepSleep, created: r.pausedAt, state: "waiting", wake: r.wakeAt})
		case "event", "signal", "approval", "human":
			ev := map[string]string{"signal": "signal.resume", "approval": "approval.decided", "human": "task.completed"}[r.waitReason]
			if ev == "" {
				ev = seedEvents[g.r.IntN(len(seedEvents))]
			}
			g.step(r, seedStep{id: g.stepID(r, "wait-"+ev), typ: vocab.StepWait, created: r.pausedAt, state: "waiting", event: ev, timeout: r.wakeAt})
		case "quota":
			id := g.stepID(r, "")
			g.step(r, seedStep{id: id, typ: vocab.StepRun, created: r.pausedAt, maxAttempts: 10})
			g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: id, started: r.pausedAt, state: "failed", ended: r.pausedAt + 1, errMsg: "rate limit reached", errName: "QuotaExceeded", next: r.wakeAt})
		default:
			g.runStep(r, from, to, kindRunVoid)
		}
	}
}

// seedStep is one flows_steps row of a seeded run; zero values are NULL.
type seedStep struct {
	id          string
	typ         vocab.StepType
	created     int64
	state       string
	maxAttempts int64
	wake        int64
	event       string
	timeout     int64
	resolved    int64
	parent      string
}

func (g *seeder) step(r *run, s seedStep) {
	g.b.steps.args = append(g.b.steps.args, r.id, s.id, string(s.typ), s.created, nullable(s.state), nullable(s.maxAttempts),
		nullable(s.wake), nullable(s.event), nullable(s.timeout), nullable(s.resolved), nullable(s.parent))
	g.stats.Steps++
}

// attemptID names the run's next attempt (attempt ids are per run).
func (g *seeder) attemptID(r *run) string {
	r.attempt++
	return "a" + strconv.Itoa(r.attempt)
}

func (g *seeder) attemptOK(r *run, step string, from, to int64, result string) {
	if result == "" {
		g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: step, started: from, state: "succeeded", ended: to, resultType: "none"})
		return
	}
	g.attemptRow(r, seedAttempt{id: g.attemptID(r), step: step, started: from, state: "succeeded", ended: to, resultType: "json", result: result})
}

// seedAttempt is one flows_step_attempts row of a seeded run; zero values
// are NULL, and ended is NULL while the attempt is started.
type seedAttempt struct {
	id         string
	step       string
	started    int64
	state      string
	ended      int64
	resultType string
	result     string
	errMsg     string
	errName    string
	next       int64
}

func (g *seeder) attemptRow(r *run, a seedAttempt) {
	var endedAt any
	if a.state != "started" {
		endedAt = a.ended
	}
	g.b.attempts.args = append(g.b.attempts.args, a.id, r.id, a.step, a.started, a.state, endedAt,
		nullable(a.resultType), nullable(a.result), nullable(a.errMsg), nullable(a.errName), nullable(a.next))
	g.stats.Attempts++
}

// inbound writes an event delivered to the run. payload "-" means no
// payload (NULL), which is not the same as the JSON null payload "null".
// claimedAt, when set, claims it for the run's latest step.
func (g *seeder) inbound(r *run, name string, at int64, payload string, claimedAt int64) {
	r.event++
	id := "e" + strconv.Itoa(r.event)
	var p any
	if payload != "-" {
		p = payload
	}
	var by, byAt any
	if claimedAt != 0 {
		by, byAt = fmt.Sprintf("%02d-wait-%s", r.steps, name), claimedAt
	}
	g.b.inbound.args = append(g.b.inbound.args, id, r.id, name, p, at, by, byAt)
	g.stats.InboundEvents++
}

func (g *seeder) runEvent(r *run, typ vocab.RunEventType, at int64, reason string) {
	g.b.runEvents.args = append(g.b.runEvents.args, r.id, r.evSeq, at, string(typ), nullable(reason))
	r.evSeq++
	g.stats.RunEvents++
}
