package snapshot

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// ActivityRequest asks how many runs were created and finished in each
// bucket of a window (docs/contract.md#overview).
type ActivityRequest struct {
	// Since and Until bound the window to [Since, Until).
	Since, Until Millis
	// Bucket is the length of one bucket in ms: the window is cut into
	// buckets from Since, the last one ending at Until (shorter when the
	// window is not a whole number of buckets).
	Bucket Millis
	// FlowName, when set, counts only the runs of that flow.
	FlowName *string
}

// ActivityBucket is what happened in one bucket: runs created (started
// counts every run created in the bucket), and runs finished, by how.
type ActivityBucket struct {
	Start, End Millis
	Started    int64
	// Finished is Completed + Failed + Cancelled.
	Finished, Completed, Failed, Cancelled int64
}

// MaxActivityBuckets bounds one request: a week of hours fits.
const MaxActivityBuckets = 200

// finishedStatuses are the statuses a run finishes in, each counted by a
// range of the finish-time index of its status.
var finishedStatuses = []vocab.Status{vocab.StatusCompleted, vocab.StatusFailed, vocab.StatusCancelled}

func (req ActivityRequest) check() (int, error) {
	if req.Bucket <= 0 {
		return 0, fault.Errorf(fault.BadUserInput, "the bucket must be a positive length of time")
	}
	if req.Until <= req.Since {
		return 0, fault.Errorf(fault.BadUserInput, "until must be after since")
	}
	n := (int64(req.Until-req.Since) + int64(req.Bucket) - 1) / int64(req.Bucket)
	if n > MaxActivityBuckets {
		return 0, fault.Errorf(fault.BadUserInput, "the window holds %d buckets; at most %d are counted at once", n, MaxActivityBuckets)
	}
	return int(n), nil
}

// activityStatement counts, in one statement, the runs created in the
// window by bucket and the runs finished in it by status and bucket: one
// range of an index per count (created_at_ms; status and finished_at_ms;
// with a flow, the flow's name first), grouped without a sort of the table.
// scope, when set, is a condition of the reading principal's scope
// (scopeTerms), its placeholders after the flow's.
func activityStatement(d store.Dialect, withFlow bool, scope ...string) string {
	flow := ""
	if withFlow {
		flow = "\n  AND " + d.FlowNameExpr() + " = $4"
	}
	for _, s := range scope {
		flow += "\n  AND " + s
	}
	since, until := d.Bound(1), d.Bound(2)
	parts := []string{`SELECT 'created' AS k, (created_at_ms - $1) / $3 AS b, count(*) AS n FROM flows_runs
WHERE created_at_ms >= ` + since + ` AND created_at_ms < ` + until + flow + `
GROUP BY 2`}
	for _, s := range finishedStatuses {
		parts = append(parts, fmt.Sprintf(`SELECT '%s', (finished_at_ms - $1) / $3, count(*) FROM flows_runs
WHERE status = '%s' AND finished_at_ms >= %s AND finished_at_ms < %s%s
GROUP BY 2`, s, s, since, until, flow))
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// RunActivity counts, in the read carried by ctx, the runs created and
// finished in each bucket of req's window. It fails with BAD_USER_INPUT for
// an empty window, a bucket that is not positive or more than
// MaxActivityBuckets buckets, and PERSISTENCE_FAILED or TIMEOUT as any read.
func (r *Reader) RunActivity(ctx context.Context, req ActivityRequest) ([]ActivityBucket, error) {
	n, err := req.check()
	if err != nil {
		return nil, err
	}
	out := make([]ActivityBucket, n)
	for i := range out {
		out[i].Start = req.Since + Millis(i)*req.Bucket
		out[i].End = min(out[i].Start+req.Bucket, req.Until)
	}
	err = r.with(ctx, func(q *querier) error {
		args := []any{int64(req.Since), int64(req.Until), int64(req.Bucket)}
		if req.FlowName != nil {
			args = append(args, *req.FlowName)
		}
		sf := scopeTerms(q.dialect(), scopeOf(ctx), req.FlowName, func(v any) string {
			args = append(args, v)
			return fmt.Sprintf("$%d", len(args))
		})
		if sf.none {
			_, err := q.position()
			return err
		}
		var terms []string
		if sf.term != "" {
			terms = append(terms, sf.term)
		}
		var (
			kind string
			b, c int64
		)
		return q.each(activityStatement(q.dialect(), req.FlowName != nil, terms...), args, []any{&kind, &b, &c}, "counting run activity", func() error {
			if b < 0 || b >= int64(n) {
				return fault.Errorf(fault.Internal, "run activity: bucket %d outside 0..%d", b, n-1)
			}
			x := &out[b]
			switch vocab.Status(kind) {
			case "created":
				x.Started = c
			case vocab.StatusCompleted:
				x.Completed = c
			case vocab.StatusFailed:
				x.Failed = c
			case vocab.StatusCancelled:
				x.Cancelled = c
			}
			x.Finished = x.Completed + x.Failed + x.Cancelled
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
