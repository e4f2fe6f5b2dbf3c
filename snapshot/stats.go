package snapshot

import (
	"context"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// FlowStats are the workflow figures of one flow (docs/contract.md#workflow-metrics).
type FlowStats struct {
	// Runs counts the flow's live runs by status.
	Runs map[vocab.Status]int64
	// Stale counts its running runs whose heartbeat is older than the
	// request's StaleBefore.
	Stale int64
	// OldestPendingMs is the creation time of its oldest pending run, and
	// HasPending says there is one.
	OldestPendingMs int64
	HasPending      bool
	// OverdueWaits counts the wait steps of its runs still waiting past
	// their timeout_at_ms.
	OverdueWaits int64
}

// WorkflowStats are the store's workflow figures at one position.
type WorkflowStats struct {
	Position Position
	// Flows holds every flow with at least one live run, by name.
	Flows map[string]*FlowStats
}

// StatsRequest says what counts as late.
type StatsRequest struct {
	// StaleBefore: a running run whose heartbeat_at_ms is earlier is stale.
	StaleBefore int64
	// NowMs: a waiting wait step whose timeout_at_ms is earlier is overdue.
	NowMs int64
}

// selectStats is the whole of a refresh of the workflow metrics, one
// statement. counts is the runs by flow and status, one scan of
// flows_runs_by_flow_status; for each flow with running or pending runs,
// the stale ones are counted and the oldest pending found by a seek in
// that index (a flow name read from it, not parsed from state_json); the
// overdue waits are a range of flows_steps_waiting_timeouts. kind says
// which part a row is: its n is a count, or for kind 2 the oldest
// creation time.
func selectStats(d store.Dialect) string {
	flow := d.FlowNameExpr()
	return `WITH counts AS (SELECT ` + flow + ` AS flow, status, count(*) AS n FROM flows_runs GROUP BY 1, 2)
SELECT 0 AS kind, flow, status, n FROM counts
UNION ALL
SELECT 1, flow, status, (SELECT count(*) FROM flows_runs
    WHERE ` + flow + ` = counts.flow AND status = 'running' AND heartbeat_at_ms < $1) FROM counts WHERE status = 'running'
UNION ALL
SELECT 2, flow, status, (SELECT min(created_at_ms) FROM flows_runs
    WHERE ` + flow + ` = counts.flow AND status = 'pending') FROM counts WHERE status = 'pending'
UNION ALL
SELECT 3, ` + flow + `, 'waiting', count(*) FROM flows_steps JOIN flows_runs ON flows_runs.run_id = flows_steps.run_id
    WHERE flows_steps.type = 'wait' AND flows_steps.state = 'waiting' AND flows_steps.timeout_at_ms < ` + d.Bound(2) + ` GROUP BY 2`
}

// WorkflowStats reads the workflow figures of the whole store in the read
// carried by ctx (or one of its own), in one statement: its cost grows with
// the store's runs and waiting wait steps, not with anything a client
// sends. ctx bounds the read.
func (r *Reader) WorkflowStats(ctx context.Context, req StatsRequest) (WorkflowStats, error) {
	out := WorkflowStats{Flows: map[string]*FlowStats{}}
	err := r.with(ctx, func(q *querier) error {
		var kind, n int64
		var flow, status string
		err := q.each(selectStats(q.dialect()), []any{req.StaleBefore, req.NowMs}, []any{&kind, &flow, &status, &n}, "reading the workflow figures", func() error {
			f := out.Flows[flow]
			if f == nil {
				f = &FlowStats{Runs: map[vocab.Status]int64{}}
				out.Flows[flow] = f
			}
			switch kind {
			case 0:
				s := vocab.Status(status)
				if !s.Valid() {
					return fault.Errorf(fault.DecodeFailed, "a run of flow %s has status %s", vocab.Quote(flow), vocab.Quote(status))
				}
				f.Runs[s] = n
			case 1:
				f.Stale = n
			case 2:
				f.OldestPendingMs, f.HasPending = n, true
			case 3:
				f.OverdueWaits = n
			}
			return nil
		})
		if err != nil {
			return err
		}
		out.Position, err = q.position()
		return err
	})
	return out, err
}
