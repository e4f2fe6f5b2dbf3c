package graph

import "github.com/flowsnap/flowsnap/snapshot"

// bucketLength is each runActivity bucket size in milliseconds
// (docs/contract.md#overview).
var bucketLength = map[ActivityBucketSize]snapshot.Millis{
	ActivityBucketSizeMinute: 60_000,
	ActivityBucketSizeHour:   3_600_000,
	ActivityBucketSizeDay:    86_400_000,
}
