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
// (docs/benchmarks.md#load-cpu-per-request).
package gcpace

import (
	"runtime/debug"
	"strconv"
)

// DefaultPercent is the collector's percent a server runs with unless told
// otherwise (see Set).
const DefaultPercent = 200

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
