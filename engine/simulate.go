package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// SimOptions tune Simulate.
type SimOptions struct {
	// Rate is how many transactions a second to write; 0 means 20.
	Rate float64
	// Seed selects the sequence of actions (their timing follows the clock).
	Seed int64
	// Out, when set, receives the achieved rate every ReportEvery.
	Out io.Writer
	// ReportEvery is how often to report; 0 means 5s.
	ReportEvery time.Duration
	// stopAfter, when above 0, ends the simulation after that many
	// transactions; for tests, which must not depend on the machine's speed.
	stopAfter int
}

// simStats counts what Simulate did, for its tests.
type simStats struct {
	// Transactions committed, and actions that found their run changed by
	// another writer and were skipped.
	Transactions, Conflicts int
	// Runs created and deleted.
	Created, Deleted int
}

// Simulate is a reference engine: until ctx is done it keeps writing engine
// actions at opts.Rate transactions a second — creating runs, starting
// them, heartbeating, suspending and waking them, journalling their steps,
// spawning children, continuing lineages as new rounds, completing, failing
// and cancelling them, and garbage-collecting old finished runs. It picks up
// the unfinished runs of a seeded store and works on an empty one too.
//
// It returns nil when ctx is done, and an error when the store fails. An
// action that finds its run changed by another writer is skipped and counted.
func Simulate(ctx context.Context, db *store.DB, opts SimOptions) error {
	_, err := simulate(ctx, db, opts)
	return err
}

func simulate(ctx context.Context, db *store.DB, opts SimOptions) (simStats, error) {
	if opts.Rate <= 0 {
		opts.Rate = 20
	}
	if opts.ReportEvery <= 0 {
		opts.ReportEvery = 5 * time.Second
	}
	s := &sim{
		r:       rand.New(rand.NewPCG(uint64(opts.Seed), 0x73696d756c617465)),
		pending: &pool{}, running: &pool{}, suspended: &pool{}, finished: &pool{},
		runs: map[string]*simRun{},
	}
	if err := s.load(ctx, db); err != nil {
		if ctx.Err() != nil {
			return s.stats, nil
		}
		return s.stats, err
	}
	s.w = NewWriter(db, s.clock)
	for i := range 4 {
		s.workers = append(s.workers, vocab.Owner{
			HostID: fmt.Sprintf("sim-worker-%d", i+1),
			PID:    int64(os.Getpid() + i),
			Nonce:  fmt.Sprintf("%016x", s.r.Uint64()^uint64(time.Now().UnixNano())),
		})
	}
	s.prefix = fmt.Sprintf("sim-%d-", s.clock())

	interval := time.Duration(float64(time.Second) / opts.Rate)
	start := time.Now()
	next, lastReport, lastCount := start, start, 0
	for {
		if err := ctx.Err(); err != nil {
			return s.stats, nil
		}
		err := s.w.Do(ctx, func(t *Tx) error { return s.act(ctx, t) })
		switch {
		case err == nil:
			s.stats.Transactions++
			s.commit()
			if s.stats.Transactions == opts.stopAfter {
				return s.stats, nil
			}
		case ctx.Err() != nil:
			return s.stats, nil
		case fault.CodeOf(err) == fault.BadUserInput:
			// Another writer got there first; forget what we thought of it.
			s.stats.Conflicts++
			s.rollback()
		default:
			return s.stats, fmt.Errorf("simulating the engine: %w", err)
		}
		if now := time.Now(); now.Sub(lastReport) >= opts.ReportEvery {
			if opts.Out != nil {
				el := now.Sub(lastReport).Seconds()
				fmt.Fprintf(opts.Out, "simulate: %.1f tx/s (%d transactions, %d active runs, %d conflicts)\n",
					float64(s.stats.Transactions-lastCount)/el, s.stats.Transactions,
					s.pending.len()+s.running.len()+s.suspended.len(), s.stats.Conflicts)
			}
			lastReport, lastCount = now, s.stats.Transactions
		}
		next = next.Add(interval)
		if lag := time.Since(next); lag > time.Second {
			// Fell behind (a slow store): resume the pace instead of bursting.
			next = time.Now()
		}
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return s.stats, nil
			case <-time.After(d):
			}
		}
	}
}

// simRun is what the simulator remembers of a run.
type simRun struct {
	id     string
	status vocab.Status
	owner  vocab.Owner
	// lineage is round 0's id for a later round; ordinal its round number.
	lineage string
	ordinal int64
	// step is the open step (a run step with a started attempt, or a
	// waiting sleep or wait step) and attempt its started attempt.
	step, stepType, attempt string
	// eventName is what the open wait step waits for; timesOut says
	// whether it has a timeout.
	eventName               string
	timesOut                bool
	steps, attempts, events int
	// tag ends the ids of journal rows the simulator adds to a run it
	// picked up from the store: a simulator that ran on it before (or the
	// seed) counted from the same start, and its ids must not collide.
	tag                    string
	children               int64
	cancelRequested, acked bool
}

// pool is a set of run ids with random picks.
type pool struct {
	ids []string
	at  map[string]int
}

func (p *pool) len() int { return len(p.ids) }

func (p *pool) add(id string) {
	if p.at == nil {
		p.at = map[string]int{}
	}
	if _, ok := p.at[id]; ok {
		return
	}
	p.at[id] = len(p.ids)
	p.ids = append(p.ids, id)
}

func (p *pool) remove(id string) {
	i, ok := p.at[id]
	if !ok {
		return
	}
	last := p.ids[len(p.ids)-1]
	p.ids[i], p.at[last] = last, i
	p.ids = p.ids[:len(p.ids)-1]
	delete(p.at, id)
}

func (p *pool) pick(r *rand.Rand) string {
	if len(p.ids) == 0 {
		return ""
	}
	return p.ids[r.IntN(len(p.ids))]
}

type sim struct {
	r                                     *rand.Rand
	w                                     *Writer
	workers                               []vocab.Owner
	prefix                                string
	created                               int
	offset                                int64
	runs                                  map[string]*simRun
	pending, running, suspended, finished *pool
	// touched are the runs the current transaction changed, with what they
	// were before, so a rolled-back transaction can be forgotten.
	touched map[string]*simRun
	stats   simStats
}

// clock is the wall clock, moved forward when the store already holds
// later times, so that what the simulator writes follows the history.
func (s *sim) clock() int64 { return time.Now().UnixMilli() + s.offset }

const (
	sqlSimUnfinished = `
SELECT run_id, status, owner_host_id, owner_pid, owner_nonce, lineage_id, round_ordinal,
  cancel_requested_at_ms, cancel_acknowledgement_json
FROM flows_runs WHERE status IN ('pending', 'running', 'suspended') LIMIT 5000`
	sqlSimFinished = `SELECT run_id FROM flows_runs WHERE status IN ('completed', 'failed', 'cancelled') LIMIT 2000`
	// The journal the unfinished runs left open: a suspended run's waiting
	// step, a running run's attempt in flight.
	sqlSimOpenSteps = `
SELECT s.run_id, s.step_id, s.type, COALESCE(s.event_name, ''),
  CASE WHEN s.timeout_at_ms IS NULL THEN 0 ELSE 1 END FROM flows_steps s
JOIN flows_runs r ON r.run_id = s.run_id
WHERE r.status = 'suspended' AND s.state = 'waiting'`
	sqlSimOpenAttempts = `
SELECT a.run_id, a.step_id, a.attempt_id FROM flows_step_attempts a
JOIN flows_runs r ON r.run_id = a.run_id
WHERE r.status = 'running' AND a.state = 'started'`
	sqlSimLatest = `SELECT COALESCE(MAX(created_at_ms), 0), (SELECT revision FROM flows_run_source) FROM flows_runs`
)

// load picks up unfinished runs (to carry on with) and finished ones (to
// garbage-collect) from the store.
func (s *sim) load(ctx context.Context, db *store.DB) error {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var latest, revision int64
	if err := tx.QueryRow(ctx, sqlSimLatest).Scan(&latest, &revision); err != nil {
		return fault.Wrap(fault.PersistenceFailed, err, "reading the store's latest run")
	}
	s.offset = max(0, latest+1-time.Now().UnixMilli())
	rows, err := tx.Query(ctx, sqlSimUnfinished)
	if err != nil {
		return fault.Wrap(fault.PersistenceFailed, err, "reading unfinished runs")
	}
	for rows.Next() {
		var (
			r                simRun
			host, nonce, lin *string
			pid, ord, req    *int64
			ack              *string
		)
		if err := rows.Scan(&r.id, &r.status, &host, &pid, &nonce, &lin, &ord, &req, &ack); err != nil {
			rows.Close()
			return fault.Wrap(fault.PersistenceFailed, err, "reading unfinished runs")
		}
		if host != nil && pid != nil && nonce != nil {
			r.owner = vocab.Owner{HostID: *host, PID: *pid, Nonce: *nonce}
		}
		if lin != nil && ord != nil {
			r.lineage, r.ordinal = *lin, *ord
		}
		r.cancelRequested, r.acked = req != nil, ack != nil
		// Journal rows the simulator adds must not collide with those of
		// the seed (numbered below 100) nor of an earlier simulator (tagged
		// with the revision it started at; the revision only grows).
		r.steps, r.attempts, r.events = 100, 100, 100
		r.tag = "." + strconv.FormatInt(revision, 36)
		s.runs[r.id] = &r
		s.poolOf(r.status).add(r.id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fault.Wrap(fault.PersistenceFailed, err, "reading unfinished runs")
	}
	err = scanAll(ctx, tx, sqlSimOpenSteps, func(rows store.Rows) error {
		var runID, stepID, typ, event string
		var timeout int64
		if err := rows.Scan(&runID, &stepID, &typ, &event, &timeout); err != nil {
			return err
		}
		if r := s.runs[runID]; r != nil {
			r.step, r.stepType, r.eventName, r.timesOut = stepID, typ, event, timeout == 1
		}
		return nil
	})
	if err != nil {
		return fault.Wrap(fault.PersistenceFailed, err, "reading waiting steps")
	}
	err = scanAll(ctx, tx, sqlSimOpenAttempts, func(rows store.Rows) error {
		var runID, stepID, attemptID string
		if err := rows.Scan(&runID, &stepID, &attemptID); err != nil {
			return err
		}
		if r := s.runs[runID]; r != nil {
			r.step, r.stepType, r.attempt = stepID, string(vocab.StepRun), attemptID
		}
		return nil
	})
	if err != nil {
		return fault.Wrap(fault.PersistenceFailed, err, "reading attempts in flight")
	}
	rows, err = tx.Query(ctx, sqlSimFinished)
	if err != nil {
		return fault.Wrap(fault.PersistenceFailed, err, "reading finished runs")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fault.Wrap(fault.PersistenceFailed, err, "reading finished runs")
		}
		s.finished.add(id)
	}
	return rows.Err()
}

// scanAll runs query and hands each row to fn.
func scanAll(ctx context.Context, tx store.Tx, query string, fn func(store.Rows) error) error {
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sim) poolOf(status vocab.Status) *pool {
	switch status {
	case vocab.StatusPending:
		return s.pending
	case vocab.StatusRunning:
		return s.running
	case vocab.StatusSuspended:
		return s.suspended
	}
	return s.finished
}

// remember notes that the transaction is about to change run r.
func (s *sim) remember(r *simRun) {
	if s.touched == nil {
		s.touched = map[string]*simRun{}
	}
	if _, ok := s.touched[r.id]; !ok {
		before := *r
		s.touched[r.id] = &before
	}
}

// setStatus moves r to status, in memory; commit or rollback settles it.
func (s *sim) setStatus(r *simRun, status vocab.Status) {
	s.remember(r)
	r.status = status
}

// commit makes the pools agree with the runs the transaction changed.
func (s *sim) commit() {
	for id, before := range s.touched {
		r := s.runs[id]
		if before.status != "" {
			s.poolOf(before.status).remove(id)
		}
		switch {
		case r == nil: // deleted
		case finished(r.status):
			// Keep only the id of a finished run, to collect it later.
			delete(s.runs, id)
			s.finished.add(id)
		default:
			s.poolOf(r.status).add(id)
		}
	}
	s.touched = nil
	// Bound what is remembered: the oldest finished ids go first.
	if over := s.finished.len() - 20000; over > 0 {
		for _, id := range append([]string(nil), s.finished.ids[:over]...) {
			s.finished.remove(id)
		}
	}
}

// rollback forgets a failed transaction: runs it created vanish, runs it
// changed are dropped, since the store may know better than we do.
func (s *sim) rollback() {
	for id, before := range s.touched {
		if before.status != "" {
			s.poolOf(before.status).remove(id)
		}
		delete(s.runs, id)
	}
	s.touched = nil
}

// act performs one engine action, chosen by weight among those that have a
// run to act on.
func (s *sim) act(ctx context.Context, t *Tx) error {
	active := s.pending.len() + s.running.len() + s.suspended.len()
	for range 8 {
		w := s.r.IntN(100)
		switch {
		case active == 0 || (w < 10 && active < 10000):
			// Past ten thousand active runs the engine only works them off.
			return s.create(ctx, t, nil)
		case w < 14 && s.pending.len() > 0:
			return s.claim(ctx, t, s.pending.pick(s.r))
		case w < 28 && s.pending.len() > 0:
			return s.start(ctx, t, s.pending.pick(s.r))
		case w < 40 && s.running.len() > 0:
			return s.heartbeat(ctx, t, s.running.pick(s.r))
		case w < 54 && s.running.len() > 0:
			return s.progress(ctx, t, s.running.pick(s.r))
		case w < 60 && s.running.len() > 0:
			return s.spawn(ctx, t, s.running.pick(s.r))
		case w < 66 && s.running.len() > 0:
			return s.wait(ctx, t, s.running.pick(s.r))
		case w < 74 && s.suspended.len() > 0:
			return s.wake(ctx, t, s.suspended.pick(s.r))
		case w < 84 && s.running.len() > 0:
			return s.complete(ctx, t, s.running.pick(s.r))
		case w < 87 && s.running.len() > 0:
			return s.fail(ctx, t, s.running.pick(s.r))
		case w < 93 && active > 0:
			return s.cancel(ctx, t)
		case w < 97 && s.finished.len() > 200:
			return s.collect(ctx, t)
		}
	}
	return s.create(ctx, t, nil)
}

// create adds a run: of its own, or the next round of lineage prev.
func (s *sim) create(ctx context.Context, t *Tx, prev *simRun) error {
	s.created++
	r := &simRun{id: fmt.Sprintf("%s%07d", s.prefix, s.created), status: vocab.StatusPending}
	spec := plainFlows[s.r.IntN(len(plainFlows))]
	nr := NewRun{ID: r.id, FlowName: spec.name,
		State: json.RawMessage(fmt.Sprintf(`{"input":{"tenant":"t-%03d"}}`, s.r.IntN(200)))}
	if prev != nil {
		lineage := prev.lineage
		if lineage == "" {
			lineage = prev.id
		}
		r.lineage, r.ordinal = lineage, prev.ordinal+1
		nr.Round = &Round{LineageID: lineage, Ordinal: r.ordinal, Previous: prev.id}
		nr.FlowName = lineageFlows[s.r.IntN(len(lineageFlows))].name
		nr.State = json.RawMessage(fmt.Sprintf(`{"input":{"cursor":%d}}`, r.ordinal))
	}
	if err := t.CreateRun(ctx, nr); err != nil {
		return err
	}
	s.runs[r.id] = r
	s.touched = ensure(s.touched)
	s.touched[r.id] = &simRun{}
	s.stats.Created++
	return t.AppendRunEvent(ctx, r.id, vocab.EventCreated, "")
}

func ensure(m map[string]*simRun) map[string]*simRun {
	if m == nil {
		return map[string]*simRun{}
	}
	return m
}

func (s *sim) get(id string) *simRun { return s.runs[id] }

func (s *sim) worker() vocab.Owner { return s.workers[s.r.IntN(len(s.workers))] }

func (s *sim) claim(ctx context.Context, t *Tx, id string) error {
	return t.Claim(ctx, id, s.worker())
}

func (s *sim) start(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	owner := s.worker()
	if err := t.Start(ctx, id, owner); err != nil {
		return err
	}
	s.setStatus(r, vocab.StatusRunning)
	r.owner = owner
	if err := t.AppendRunEvent(ctx, id, vocab.EventStarted, ""); err != nil {
		return err
	}
	return s.openRunStep(ctx, t, r)
}

// openRunStep adds a run step to r's journal and starts its first attempt.
func (s *sim) openRunStep(ctx context.Context, t *Tx, r *simRun) error {
	s.remember(r)
	r.steps++
	r.step, r.stepType = fmt.Sprintf("%03d-work%s", r.steps, r.tag), string(vocab.StepRun)
	if err := t.AddStep(ctx, r.id, Step{ID: r.step, Type: vocab.StepRun, MaxAttempts: 3}); err != nil {
		return err
	}
	return s.startAttempt(ctx, t, r)
}

func (s *sim) startAttempt(ctx context.Context, t *Tx, r *simRun) error {
	r.attempts++
	r.attempt = fmt.Sprintf("a%d%s", r.attempts, r.tag)
	return t.StartAttempt(ctx, r.id, r.step, r.attempt)
}

func (s *sim) heartbeat(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	if err := t.Heartbeat(ctx, id, r.owner.Nonce); err != nil {
		return err
	}
	// A worker that notices a cancellation request acknowledges it.
	if r.cancelRequested && !r.acked {
		s.remember(r)
		r.acked = true
		return t.AcknowledgeCancel(ctx, id, r.owner)
	}
	return nil
}

// progress moves a running run's journal on: the open attempt succeeds
// (with a value, null or nothing) or fails and is retried, and a new step
// opens.
func (s *sim) progress(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	s.remember(r)
	if r.attempt == "" {
		return s.openRunStep(ctx, t, r)
	}
	if s.r.IntN(4) == 0 {
		if err := t.FailAttempt(ctx, id, r.attempt, AttemptError{
			Message: "upstream did not answer within 30s", Name: "TimeoutError", NextAttemptAt: s.clock() + 2000,
		}); err != nil {
			return err
		}
		return s.startAttempt(ctx, t, r)
	}
	var result json.RawMessage
	switch s.r.IntN(3) {
	case 0:
		result = json.RawMessage(fmt.Sprintf(`{"count":%d}`, s.r.IntN(100)))
	case 1:
		result = json.RawMessage("null")
	}
	if err := t.SucceedAttempt(ctx, id, r.attempt, result); err != nil {
		return err
	}
	r.attempt = ""
	return s.openRunStep(ctx, t, r)
}

// closeAttempt ends r's open attempt, if the simulator knows of one, so
// the run can leave the running state with a tidy journal.
func (s *sim) closeAttempt(ctx context.Context, t *Tx, r *simRun) error {
	if r.attempt == "" {
		return nil
	}
	s.remember(r)
	a := r.attempt
	r.attempt = ""
	return t.SucceedAttempt(ctx, r.id, a, json.RawMessage(`{"ok":true}`))
}

// spawn adds a child to a running run.
func (s *sim) spawn(ctx context.Context, t *Tx, id string) error {
	p := s.get(id)
	s.remember(p)
	s.created++
	c := &simRun{id: fmt.Sprintf("%s%07d", s.prefix, s.created), status: vocab.StatusPending}
	pf := parentFlows[s.r.IntN(len(parentFlows))]
	if err := t.CreateRun(ctx, NewRun{ID: c.id, FlowName: pf.child.name, Parents: []ParentEdge{{ParentID: id, Seq: p.children}}}); err != nil {
		return err
	}
	p.children++
	s.runs[c.id] = c
	s.touched[c.id] = &simRun{}
	s.stats.Created++
	return t.AppendRunEvent(ctx, c.id, vocab.EventCreated, "")
}

// wait suspends a running run on a timer or an event.
func (s *sim) wait(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	if err := s.closeAttempt(ctx, t, r); err != nil {
		return err
	}
	now := s.clock()
	r.steps++
	w := Waiting{}
	var step Step
	if s.r.IntN(2) == 0 {
		w.Reason, w.WakeAt = "timer", now+5000
		step = Step{ID: fmt.Sprintf("%03d-sleep%s", r.steps, r.tag), Type: vocab.StepSleep, WakeAt: w.WakeAt}
	} else {
		ev := seedEvents[s.r.IntN(len(seedEvents))]
		w.Reason, w.Token = "event", fmt.Sprintf("wt_%016x%016x", s.r.Uint64(), s.r.Uint64())
		w.Request = json.RawMessage(fmt.Sprintf(`{"eventName":%q}`, ev))
		step = Step{ID: fmt.Sprintf("%03d-wait-%s%s", r.steps, ev, r.tag), Type: vocab.StepWait, EventName: ev, TimeoutAt: now + 60000}
	}
	if err := t.AddStep(ctx, id, step); err != nil {
		return err
	}
	if err := t.Wait(ctx, id, w); err != nil {
		return err
	}
	s.setStatus(r, vocab.StatusSuspended)
	r.owner, r.step, r.stepType, r.eventName, r.timesOut = vocab.Owner{}, step.ID, string(step.Type), step.EventName, step.TimeoutAt != 0
	return t.AppendRunEvent(ctx, id, vocab.EventPaused, "")
}

// wake resumes a suspended run, resolving the step it waited in: the sleep
// elapses, the wait gets its event (with a payload, none, or null) or times
// out.
func (s *sim) wake(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	s.remember(r)
	switch r.stepType {
	case string(vocab.StepSleep):
		if err := t.ElapseSleep(ctx, id, r.step); err != nil {
			return err
		}
	case string(vocab.StepWait):
		if r.timesOut && s.r.IntN(5) == 0 {
			if err := t.TimeOutWait(ctx, id, r.step); err != nil {
				return err
			}
			break
		}
		r.events++
		ev := InboundEvent{ID: fmt.Sprintf("e%d%s", r.events, r.tag), RunID: id, Name: r.eventName}
		switch s.r.IntN(3) {
		case 0:
			ev.Payload = json.RawMessage(`{"ok":true}`)
		case 1:
			ev.Payload = json.RawMessage("null")
		}
		if err := t.AddInboundEvent(ctx, ev); err != nil {
			return err
		}
		if err := t.SatisfyWait(ctx, id, r.step, ev.ID); err != nil {
			return err
		}
	}
	owner := s.worker()
	if err := t.Wake(ctx, id, owner); err != nil {
		return err
	}
	s.setStatus(r, vocab.StatusRunning)
	r.owner, r.step, r.stepType, r.eventName = owner, "", "", ""
	return t.AppendRunEvent(ctx, id, vocab.EventResumed, "")
}

// complete finishes a running run; a lineage round sometimes continues as
// a new round in the same transaction.
func (s *sim) complete(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	if err := s.closeAttempt(ctx, t, r); err != nil {
		return err
	}
	var out json.RawMessage
	if s.r.IntN(5) != 0 {
		out = json.RawMessage(fmt.Sprintf(`{"items":%d}`, s.r.IntN(1000)))
	}
	if err := t.Complete(ctx, id, out); err != nil {
		return err
	}
	s.setStatus(r, vocab.StatusCompleted)
	if err := t.AppendRunEvent(ctx, id, vocab.EventCompleted, ""); err != nil {
		return err
	}
	if (r.lineage != "" && s.r.IntN(5) != 0) || s.r.IntN(4) == 0 {
		return s.create(ctx, t, r)
	}
	return nil
}

func (s *sim) fail(ctx context.Context, t *Tx, id string) error {
	r := s.get(id)
	s.remember(r)
	if r.attempt != "" {
		if err := t.FailAttempt(ctx, id, r.attempt, AttemptError{Message: "502 Bad Gateway", Name: "HTTPError"}); err != nil {
			return err
		}
		r.attempt = ""
	}
	if err := t.Fail(ctx, id, RunError{Name: "HTTPError", Message: "502 Bad Gateway"}); err != nil {
		return err
	}
	s.setStatus(r, vocab.StatusFailed)
	return t.AppendRunEvent(ctx, id, vocab.EventFailed, "")
}

// cancel requests the cancellation of an active run, or carries out one
// requested earlier.
func (s *sim) cancel(ctx context.Context, t *Tx) error {
	var r *simRun
	switch w := s.r.IntN(3); {
	case w == 0 && s.suspended.len() > 0:
		r = s.get(s.suspended.pick(s.r))
	case w == 1 && s.pending.len() > 0:
		r = s.get(s.pending.pick(s.r))
	case s.running.len() > 0:
		r = s.get(s.running.pick(s.r))
	case s.pending.len() > 0:
		r = s.get(s.pending.pick(s.r))
	default:
		r = s.get(s.suspended.pick(s.r))
	}
	s.remember(r)
	if !r.cancelRequested {
		r.cancelRequested = true
		return t.RequestCancel(ctx, r.id)
	}
	if r.attempt != "" {
		if err := t.FailAttempt(ctx, r.id, r.attempt, AttemptError{Message: "run cancelled", Name: "CancelledError"}); err != nil {
			return err
		}
		r.attempt = ""
	}
	if err := t.Cancel(ctx, r.id); err != nil {
		return err
	}
	s.setStatus(r, vocab.StatusCancelled)
	return t.AppendRunEvent(ctx, r.id, vocab.EventCancelled, "requested by operator")
}

// collect garbage-collects one of the oldest finished runs it knows.
func (s *sim) collect(ctx context.Context, t *Tx) error {
	id := s.finished.ids[s.r.IntN(min(100, s.finished.len()))]
	if err := t.Delete(ctx, id); err != nil {
		return err
	}
	s.touched = ensure(s.touched)
	s.touched[id] = &simRun{status: vocab.StatusCompleted}
	delete(s.runs, id)
	s.stats.Deleted++
	return nil
}
