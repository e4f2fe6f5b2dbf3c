package snapshot_test

import (
	"context"
	"slices"
	"testing"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// bruteActivity counts, in Go, what RunActivity must answer for req.
func bruteActivity(all []*snapshot.Run, req snapshot.ActivityRequest) []snapshot.ActivityBucket {
	n := int((req.Until - req.Since + req.Bucket - 1) / req.Bucket)
	out := make([]snapshot.ActivityBucket, n)
	for i := range out {
		out[i].Start = req.Since + snapshot.Millis(i)*req.Bucket
		out[i].End = min(out[i].Start+req.Bucket, req.Until)
	}
	at := func(t snapshot.Millis) *snapshot.ActivityBucket {
		if t < req.Since || t >= req.Until {
			return nil
		}
		return &out[(t-req.Since)/req.Bucket]
	}
	for _, r := range all {
		if req.FlowName != nil && r.FlowName != *req.FlowName {
			continue
		}
		if b := at(r.CreatedAt); b != nil {
			b.Started++
		}
		if r.FinishedAt == nil {
			continue
		}
		if b := at(*r.FinishedAt); b != nil {
			switch r.Status {
			case vocab.StatusCompleted:
				b.Completed++
			case vocab.StatusFailed:
				b.Failed++
			case vocab.StatusCancelled:
				b.Cancelled++
			default:
				continue
			}
			b.Finished++
		}
	}
	return out
}

// TestRunActivityAgreesWithBruteForce compares each bucket's counts with
// a count in Go of every run of a seeded store, with and without a flow,
// for windows that cut the history in several ways.
func TestRunActivityAgreesWithBruteForce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		f := listFixture(t, d, 400)
		all := f.allRuns(t)
		first, last := all[0].CreatedAt, all[0].CreatedAt
		finished := 0
		for _, r := range all {
			first, last = min(first, r.CreatedAt), max(last, r.CreatedAt)
			if r.FinishedAt != nil {
				last = max(last, *r.FinishedAt)
				finished++
			}
		}
		if finished == 0 {
			t.Fatal("the seeded store has no finished run")
		}
		flow := listFilters(t, all)["flowName"].FlowName
		span := last + 1 - first
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			req  snapshot.ActivityRequest
		}{
			{"the whole history in 150 buckets", snapshot.ActivityRequest{Since: first, Until: last + 1, Bucket: (span + 149) / 150}},
			{"the whole history in one bucket", snapshot.ActivityRequest{Since: first, Until: last + 1, Bucket: span}},
			{"its second half by hour", snapshot.ActivityRequest{Since: last + 1 - 200*3_600_000, Until: last + 1, Bucket: 3_600_000}},
			{"a window with a short last bucket", snapshot.ActivityRequest{Since: first + span/3, Until: first + 2*span/3 + 7, Bucket: span / 50}},
			{"one flow", snapshot.ActivityRequest{Since: first, Until: last + 1, Bucket: (span + 99) / 100, FlowName: flow}},
			{"a flow with no run", snapshot.ActivityRequest{Since: first, Until: last + 1, Bucket: span / 10, FlowName: ptr("no-such-flow")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := f.r.RunActivity(ctx, tc.req)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteActivity(all, tc.req)
				if !slices.Equal(got, want) {
					t.Fatalf("got  %+v\nwant %+v", got, want)
				}
				var started, ended int64
				for _, b := range got {
					started += b.Started
					ended += b.Finished
				}
				if tc.req.FlowName == nil && tc.name != "its second half by hour" && tc.name != "a window with a short last bucket" && (started != int64(len(all)) || ended != int64(finished)) {
					t.Fatalf("the buckets hold %d started and %d finished runs of %d and %d", started, ended, len(all), finished)
				}
			})
		}
	})
}

func TestRunActivityRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, store.SQLite)
	ctx := context.Background()
	for name, req := range map[string]snapshot.ActivityRequest{
		"an empty window":       {Since: 10, Until: 10, Bucket: 1},
		"a window backwards":    {Since: 10, Until: 5, Bucket: 1},
		"a bucket of no length": {Since: 0, Until: 10},
		"a negative bucket":     {Since: 0, Until: 10, Bucket: -1},
		"more than 200 buckets": {Since: 0, Until: 201, Bucket: 1},
		"a week of minutes":     {Since: 0, Until: 7 * 86_400_000, Bucket: 60_000},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.r.RunActivity(ctx, req)
			wantCode(t, err, fault.BadUserInput)
		})
	}
	if _, err := f.r.RunActivity(ctx, snapshot.ActivityRequest{Since: 0, Until: 200, Bucket: 1}); err != nil {
		t.Fatalf("200 buckets: %v", err)
	}
}
