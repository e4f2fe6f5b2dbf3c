package endpoint_test

import (
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestRunActivityGraphQL reads runActivity over HTTP: the fixture's fan
// runs, finished a minute apart an hour after their creation, land in the
// buckets of their finish, and a bad window is BAD_USER_INPUT.
func TestRunActivityGraphQL(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		e := fixture(t, d, endpoint.Options{})
		finishFans(t, e)
		const q = `query($since: DateTime!, $until: DateTime!, $bucket: ActivityBucketSize, $flow: String) {
			runActivity(since: $since, until: $until, bucket: $bucket, flowName: $flow) { start end started finished completed failed cancelled } }`
		// Minutes from an hour after creation: fan-00i finished in minute i+1.
		since := createdAt + 3_600_000
		r := e.ok(q, map[string]any{"since": rfc3339(since), "until": rfc3339(since + 12*60_000), "bucket": "MINUTE"})
		buckets := get(r.Data, "runActivity").([]any)
		if len(buckets) != 12 {
			t.Fatalf("%d buckets, want 12", len(buckets))
		}
		for i, b := range buckets {
			wantFinished, wantFailed := 0.0, 0.0
			if i >= 1 && i <= 10 {
				wantFinished = 1
				if (i-1)%2 == 0 {
					wantFailed = 1
				}
			}
			if get(b, "finished") != wantFinished || get(b, "failed") != wantFailed || get(b, "start") != rfc3339(since+int64(i)*60_000) {
				t.Errorf("bucket %d = %v, want %v finished, %v failed", i, b, wantFinished, wantFailed)
			}
		}
		for name, vars := range map[string]map[string]any{
			"more than 200 buckets": {"since": rfc3339(since), "until": rfc3339(since + 201*60_000), "bucket": "MINUTE"},
			"an empty window":       {"since": rfc3339(since), "until": rfc3339(since)},
			"a window backwards":    {"since": rfc3339(since), "until": rfc3339(since - 1)},
		} {
			t.Run(name, func(t *testing.T) {
				if r := e.do(q, vars); !r.hasCode("BAD_USER_INPUT") {
					t.Fatalf("errors %+v, want BAD_USER_INPUT", r.Errors)
				}
			})
		}
		if r := e.do(q, map[string]any{"since": rfc3339(since), "until": rfc3339(since + 1), "bucket": "WEEK"}); len(r.Errors) == 0 {
			t.Fatal("a bucket the enum does not name was accepted")
		}
	})
}
