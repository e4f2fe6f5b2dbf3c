package graph

import "github.com/flowsnap/flowsnap/snapshot"

// bucketLength is each runActivity bucket size in milliseconds
// (docs/contract.md#overview).
var bucketLength = map[ActivityBucketSize]snapshot.Millis{
	ActivityBucketSizeMinute: 60_000,
	ActivityBucketSizeHour:   3_600_000,
	ActivityBucketSizeDay:    86_400_000,
}

// activityComplexity prices runActivity at its buckets times its
// selection, as a page of that many elements.
func activityComplexity(c *ComplexityRoot) {
	c.Query.RunActivity = func(child int, since, until snapshot.Millis, bucket *ActivityBucketSize, _ *string) int {
		size := bucketLength[ActivityBucketSizeHour]
		if bucket != nil && bucketLength[*bucket] > 0 {
			size = bucketLength[*bucket]
		}
		n := int(min(max(int64(until-since)/int64(size)+1, 1), snapshot.MaxActivityBuckets))
		return 1 + n*max(child, 1)
	}
}
