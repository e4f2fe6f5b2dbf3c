package snapshot

import (
	"context"
	"fmt"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// The run journal (docs/contract.md#engine-store) is read like children and rounds: a batch of
// pages in one statement, each page a keyset slice of its run's rows, and
// what hangs off a batch of steps (their attempts, their parent steps, the
// step each run is blocked on) in one statement per batch. Every row is
// decoded and checked as a run is; a broken one fails its own element.

// MaxLastAttempts is the most attempts of one step that one read returns, and
// DefaultLastAttempts how many when the caller does not say.
const (
	DefaultLastAttempts = 20
	MaxLastAttempts     = 200
)

// stepColumns are the columns of a step read, in the order rawStep.dest
// scans them: the step's row; its latest attempt by (start time, attempt
// id) and how many it has, from which a run step's state derives; and the
// inbound event it claimed, which a step claims at most one of (a unique
// index), so the join never repeats a step. Aliased, since a page wraps
// them in a derived table whose columns must have distinct names.
const stepColumns = `s.run_id AS s_run, s.step_id AS s_id, s.type AS s_type, s.created_at_ms AS s_created,
	s.state AS s_state, s.max_attempts AS s_max, s.target_wake_at_ms AS s_wake, s.event_name AS s_event,
	s.timeout_at_ms AS s_timeout, s.resolved_at_ms AS s_resolved, s.parent_step_id AS s_parent,
	la.state AS la_state, la.ended_at_ms AS la_ended, la.next_attempt_at_ms AS la_next,
	(SELECT count(*) FROM flows_step_attempts AS n WHERE n.run_id = s.run_id AND n.step_id = s.step_id) AS s_attempts,
	` + inboundColumns

// stepJoins joins a step s to its latest attempt la and its claimed event
// e.
var stepJoins = `
LEFT JOIN flows_step_attempts AS la ON la.run_id = s.run_id AND la.attempt_id = (` + latestAttempt("s") + `)
LEFT JOIN flows_inbound_events AS e ON e.run_id = s.run_id AND e.claimed_by = s.step_id`

// latestAttempt is the id of the latest attempt of step alias, by (start
// time, attempt id): one probe of flows_step_attempts_by_step.
func latestAttempt(alias string) string {
	return `SELECT a.attempt_id FROM flows_step_attempts AS a
		WHERE a.run_id = ` + alias + `.run_id AND a.step_id = ` + alias + `.step_id
		ORDER BY a.started_at_ms DESC, a.attempt_id DESC LIMIT 1`
}

// inboundColumns are the columns of an inbound event e, in the order
// rawInbound.dest scans them.
const inboundColumns = `e.run_id AS e_run, e.event_id AS e_id, e.event_name AS e_name, e.payload AS e_payload,
	e.created_at_ms AS e_created, e.claimed_by AS e_by, e.claimed_at_ms AS e_at`

// journalPages wraps the union of a journal list's slices; UNION ALL keeps
// no order of its own, and sorting at most 500 pages of 201 rows is cheap.
func journalPages(union string) string { return union + "\nORDER BY 1, 2, 3" }

// Steps are ordered by (creation time, step id), a range scan of the index
// flows_steps_by_run_created, so a page costs the same at any depth.
var stepList = pageList{kind: cursor.Steps, hasLast: true, cols: "p.*", statement: journalPages, keyset: `SELECT s.created_at_ms AS ord, s.step_id AS id, ` + stepColumns + `
	FROM flows_steps AS s` + stepJoins + `
	WHERE s.run_id = %[1]s AND (s.created_at_ms, s.step_id) > (%[2]s, %[3]s)
	ORDER BY s.created_at_ms, s.step_id LIMIT $%[4]d`}

// Inbound events are ordered by (creation time, event id), like steps, on
// the index flows_inbound_events_by_run_created.
var inboundList = pageList{kind: cursor.InboundEvents, hasLast: true, cols: "p.*", statement: journalPages, keyset: `SELECT e.created_at_ms AS ord, e.event_id AS id, ` + inboundColumns + `
	FROM flows_inbound_events AS e
	WHERE e.run_id = %[1]s AND (e.created_at_ms, e.event_id) > (%[2]s, %[3]s)
	ORDER BY e.created_at_ms, e.event_id LIMIT $%[4]d`}

// Run events are ordered by seq, unique within a run: a range scan of the
// primary key.
var runEventList = pageList{kind: cursor.Events, cols: "p.*", statement: journalPages, keyset: `SELECT v.seq AS ord, '' AS id,
	v.run_id AS v_run, v.seq AS v_seq, v.recorded_at_ms AS v_at, v.type AS v_type, v.cancellation_reason AS v_reason
	FROM flows_run_events AS v
	WHERE v.run_id = %[1]s AND v.seq > %[2]s
	ORDER BY v.seq LIMIT $%[4]d`}

// StepPages reads a batch of pages of runs' steps, ordered by (creation
// time, step id), nested steps included, in one statement whatever the
// batch's size. Each request's Anchor is the run; Lineage is unused.
// Results are in request order; a bad page size or cursor fails only its
// request, a broken row only its edge.
func (r *Reader) StepPages(ctx context.Context, reqs []PageRequest) ([]Result[*StepPage], error) {
	var raw rawStep
	return readJournalPages(ctx, r, stepList, reqs, raw.dest(), raw.decode,
		func(c string, step Step, err error) StepEdge { return StepEdge{Cursor: c, Step: step, Err: err} },
		func(anchor string, edges []StepEdge, info PageInfo) *StepPage {
			return &StepPage{Anchor: anchor, Edges: edges, PageInfo: info}
		})
}

// readJournalPages reads a batch of pages of one journal list, as readPages
// does, each row decoded by decode and made an edge by edge.
func readJournalPages[T, E, P any](ctx context.Context, r *Reader, list pageList, reqs []PageRequest, dest []any,
	decode func() (T, error), edge func(cursor string, v T, err error) E, page func(anchor string, edges []E, info PageInfo) P) ([]Result[P], error) {
	return readPages(ctx, r, only(list), reqs, dest,
		func(_ Position, c string, _ int64, _ string) E {
			v, err := decode()
			return edge(c, v, err)
		},
		func(req PageRequest, edges []E, info PageInfo) P { return page(req.Anchor, edges, info) }, nil)
}

// InboundEventPages reads a batch of pages of the events sent to runs,
// ordered by (creation time, event id), in one statement. It reports
// errors as StepPages does.
func (r *Reader) InboundEventPages(ctx context.Context, reqs []PageRequest) ([]Result[*InboundEventPage], error) {
	var raw rawInbound
	return readJournalPages(ctx, r, inboundList, reqs, raw.dest(), raw.decode,
		func(c string, ev *InboundEvent, err error) InboundEventEdge {
			return InboundEventEdge{Cursor: c, Event: ev, Err: err}
		},
		func(anchor string, edges []InboundEventEdge, info PageInfo) *InboundEventPage {
			return &InboundEventPage{Anchor: anchor, Edges: edges, PageInfo: info}
		})
}

// RunEventPages reads a batch of pages of runs' lifecycle logs, ordered by
// seq, in one statement. It reports errors as StepPages does.
func (r *Reader) RunEventPages(ctx context.Context, reqs []PageRequest) ([]Result[*RunEventPage], error) {
	var raw rawRunEvent
	return readJournalPages(ctx, r, runEventList, reqs, raw.dest(), raw.decode,
		func(c string, ev *RunEvent, err error) RunEventEdge {
			return RunEventEdge{Cursor: c, Event: ev, Err: err}
		},
		func(anchor string, edges []RunEventEdge, info PageInfo) *RunEventPage {
			return &RunEventPage{Anchor: anchor, Edges: edges, PageInfo: info}
		})
}

// Steps reads steps by key in one statement: one Result[Step] per key, in
// request order, with a nil Step where the run has no such step.
func (r *Reader) Steps(ctx context.Context, keys []StepKey) ([]Result[Step], error) {
	return readWith(ctx, r, func(q *querier) ([]Result[Step], error) { return q.steps(keys) })
}

func selectSteps(d store.Dialect) string {
	return `WITH k(id, sub) AS (` + d.TextPairs(1) + `)
SELECT ` + stepColumns + `
FROM k JOIN flows_steps AS s ON s.run_id = k.id AND s.step_id = k.sub` + stepJoins
}

func (q *querier) steps(keys []StepKey) ([]Result[Step], error) {
	out := make([]Result[Step], len(keys))
	index, pairs := indexKeys(keys, out, func(r *Result[Step], err error) { r.Err = err })
	if len(pairs) == 0 {
		return out, nil
	}
	var raw rawStep
	err := q.each(selectSteps(q.dialect()), []any{q.dialect().TextPairsArg(pairs)}, raw.dest(), "reading steps", func() error {
		step, err := raw.decode()
		runID, _ := toText(raw.runID)
		stepID, _ := toText(raw.stepID)
		for _, i := range index[StepKey{RunID: runID, StepID: stepID}] {
			out[i] = Result[Step]{Value: step, Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// indexKeys checks keys, setting the error of each malformed one in out
// through fail, and returns where each valid key is asked for and the
// distinct valid keys as pairs.
func indexKeys[R any](keys []StepKey, out []R, fail func(*R, error)) (map[StepKey][]int, [][2]string) {
	index := make(map[StepKey][]int, len(keys))
	var pairs [][2]string
	for i, k := range keys {
		err := vocab.CheckID("an id", k.RunID)
		if err == nil {
			err = vocab.CheckID("an id", k.StepID)
		}
		if err != nil {
			fail(&out[i], err)
			continue
		}
		if _, seen := index[k]; !seen {
			pairs = append(pairs, [2]string{k.RunID, k.StepID})
		}
		index[k] = append(index[k], i)
	}
	return index, pairs
}

// CurrentSteps reads, in one statement, the step each of runs is blocked
// on: the latest step by (creation time, step id) that is unresolved (see
// StepState.Resolved). A finished run, or one with no unresolved step, has
// a nil Step. With nested steps the innermost unresolved step is the
// latest created, so that is the one.
func (r *Reader) CurrentSteps(ctx context.Context, runs []*Run) ([]Result[Step], error) {
	out := make([]Result[Step], len(runs))
	index := make(map[string][]int, len(runs))
	var ids []string
	for i, run := range runs {
		if run == nil || run.Status.Finished() {
			continue
		}
		if _, seen := index[run.ID]; !seen {
			ids = append(ids, run.ID)
		}
		index[run.ID] = append(index[run.ID], i)
	}
	if len(ids) == 0 {
		return out, nil
	}
	err := r.with(ctx, func(q *querier) error {
		var raw rawStep
		return q.each(selectCurrentSteps(q.dialect()), []any{q.dialect().TextListArg(ids)}, raw.dest(), "reading current steps", func() error {
			step, err := raw.decode()
			runID, _ := toText(raw.runID)
			for _, i := range index[runID] {
				out[i] = Result[Step]{Value: step, Err: err}
			}
			return nil
		})
	})
	return out, err
}

// unresolvedStep says that step c, whose latest attempt is ca, is
// unresolved: what StepState.Resolved says of the state rawStep.decode
// derives.
const unresolvedStep = `(c.type <> 'run' AND c.state = 'waiting')
		OR (c.type = 'run' AND (ca.attempt_id IS NULL OR ca.state = 'started'
			OR (ca.state = 'failed' AND ca.next_attempt_at_ms IS NOT NULL)))`

func selectCurrentSteps(d store.Dialect) string {
	return `WITH q(id) AS (` + d.TextList(1) + `)
SELECT ` + stepColumns + `
FROM q JOIN flows_steps AS s ON s.run_id = q.id AND s.step_id = (
	SELECT c.step_id FROM flows_steps AS c
	LEFT JOIN flows_step_attempts AS ca ON ca.run_id = c.run_id AND ca.attempt_id = (` + latestAttempt("c") + `)
	WHERE c.run_id = q.id AND (` + unresolvedStep + `)
	ORDER BY c.created_at_ms DESC, c.step_id DESC LIMIT 1)` + stepJoins
}

// Attempts reads the attempts of a batch of run steps in one statement:
// for each key the step's latest last attempts (nil: DefaultLastAttempts;
// 1..MaxLastAttempts), oldest first, numbered among all of the step's attempts
// by (start time, attempt id). Results are in request order; a bad last
// fails only its request, a broken row only its attempt.
func (r *Reader) Attempts(ctx context.Context, keys []StepKey, last []*int) ([]Result[[]Result[*Attempt]], error) {
	if len(last) != len(keys) {
		return nil, fmt.Errorf("snapshot: %d keys but %d limits", len(keys), len(last))
	}
	out := make([]Result[[]Result[*Attempt]], len(keys))
	limits := make([]int, len(keys))
	most := 0
	for i, n := range last {
		limits[i] = DefaultLastAttempts
		if n != nil {
			if *n < 1 || *n > MaxLastAttempts {
				out[i].Err = fault.Errorf(fault.BadUserInput, "last must be between 1 and %d, got %d", MaxLastAttempts, *n)
				continue
			}
			limits[i] = *n
		}
		most = max(most, limits[i])
	}
	valid := make([]StepKey, len(keys))
	for i, k := range keys {
		if out[i].Err == nil {
			valid[i] = k
		}
	}
	index, pairs := indexKeys(valid, out, func(r *Result[[]Result[*Attempt]], err error) {
		if r.Err == nil {
			r.Err = err
		}
	})
	if len(pairs) == 0 {
		return out, nil
	}
	got := make(map[StepKey][]Result[*Attempt], len(pairs))
	err := r.with(ctx, func(q *querier) error {
		var raw rawAttempt
		return q.each(selectAttempts(q.dialect()), []any{q.dialect().TextPairsArg(pairs), int64(most)}, raw.dest(), "reading attempts", func() error {
			a, err := raw.decode()
			k := StepKey{RunID: raw.runID, StepID: raw.stepID}
			got[k] = append(got[k], Result[*Attempt]{Value: a, Err: err})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for k, at := range index {
		list := got[k]
		for _, i := range at {
			if out[i].Err != nil {
				continue
			}
			// The statement read the most any key asked for; each key
			// keeps its own latest.
			own := list[max(0, len(list)-limits[i]):]
			out[i].Value = append([]Result[*Attempt](nil), own...)
		}
	}
	return out, nil
}

// selectAttempts numbers every attempt of the asked steps and keeps the
// latest $2 of each: the number counts all of a step's attempts, not only
// those returned.
func selectAttempts(d store.Dialect) string {
	return `WITH k(id, sub) AS (` + d.TextPairs(1) + `),
t AS (
	SELECT a.run_id, a.step_id, a.attempt_id, a.started_at_ms, a.state, a.ended_at_ms,
		a.result_type, a.result_json, a.error_message, a.error_name, a.next_attempt_at_ms,
		ROW_NUMBER() OVER (PARTITION BY a.run_id, a.step_id ORDER BY a.started_at_ms, a.attempt_id) AS number,
		COUNT(*) OVER (PARTITION BY a.run_id, a.step_id) AS total
	FROM k JOIN flows_step_attempts AS a ON a.run_id = k.id AND a.step_id = k.sub)
SELECT run_id, step_id, attempt_id, started_at_ms, state, ended_at_ms,
	result_type, result_json, error_message, error_name, next_attempt_at_ms, number
FROM t WHERE number > total - $2
ORDER BY run_id, step_id, number`
}
