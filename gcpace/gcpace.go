// Package gcpace sets how often the Go garbage collector runs in a
// flowsnap server.
//
// A request allocates tens of kilobytes that are garbage once its answer
// is sent, while what the server keeps live (its caches, its connections)
// is a few MiB. At the runtime's default pace (GOGC=100: collect when the
// heap has grown by as much as is live) that is a collection every few
// hundred requests, and collecting is a large share of a small query's
// CPU. At DefaultPercent the heap grows to three times what is live before
// it is collected: half the collections for a few MiB more memory
// (docs/benchmarks.md#load-cpu-per-request). So that many clients at once
// do not grow that to more than a small server should hold, a server also
// runs with a soft memory limit (DefaultMemoryLimit, or twice what is
// live when that is more; see Limit): near it the collector runs sooner
// than the percent says.
package gcpace

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// DefaultPercent is the collector's percent a server runs with unless told
// otherwise (see Set).
const DefaultPercent = 200

// DefaultMemoryLimit is the soft memory limit (GOMEMLIMIT's meaning) a
// server runs with unless GOMEMLIMIT says otherwise: what the Go runtime
// holds (heap, stacks, its own), not SQLite's page caches. A server's
// live heap is a few MiB, so the limit only shortens the collector's pace
// when many requests at once grow the heap: at 64 clients it keeps the
// server's peak memory near 60 MiB where it rose past 64
// (docs/benchmarks.md#every-field-selected).
const DefaultMemoryLimit = 28 << 20

// Limit sets the runtime's soft memory limit to DefaultMemoryLimit and
// returns it; a GOMEMLIMIT in the environment, which the runtime has
// applied already, is kept instead, and the limit in force returned.
//
// The default limit then follows what is live: every second it is set to
// LimitFor the live heap, so that a server that keeps more live than the
// default allows (thousands of subscriptions, a large run cache) collects
// at most as often as the runtime's own pace would (GOGC=100), never
// continuously as a fixed limit below its live heap would have it.
func Limit(getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(DefaultMemoryLimit)
	following.Do(func() {
		go func() {
			for range time.Tick(time.Second) {
				Follow()
			}
		}()
	})
	return DefaultMemoryLimit
}

var following sync.Once

// LimitFor is the soft memory limit a server with live bytes of live heap
// runs with by default: DefaultMemoryLimit, or twice what is live when that
// is more.
func LimitFor(live uint64) int64 {
	return max(DefaultMemoryLimit, 2*int64(min(live, math.MaxInt64/2)))
}

// Follow sets the soft memory limit to LimitFor the live heap the runtime
// measured at its last collection, and returns it.
func Follow() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	var live uint64
	if sample[0].Value.Kind() == metrics.KindUint64 {
		live = sample[0].Value.Uint64()
	}
	limit := LimitFor(live)
	debug.SetMemoryLimit(limit)
	return limit
}

// Set sets the collector's percent (GOGC's meaning; negative turns the
// collector off) and returns it. When explicit is false, a GOGC in the
// environment, which the runtime has applied already, is kept instead,
// and its percent returned.
func Set(getenv func(string) string, percent int, explicit bool) int {
	if v := getenv("GOGC"); v != "" && !explicit {
		if v == "off" {
			return -1
		}
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	debug.SetGCPercent(percent)
	return percent
}
