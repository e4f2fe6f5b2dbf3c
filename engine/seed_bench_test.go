package engine

import (
	"context"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store/storetest"
)

// BenchmarkSeed seeds 100,000 runs into a fresh store per iteration and
// reports the rate in runs/s; creating and migrating the store is not timed.
//
//	go test ./engine -run '^$' -bench BenchmarkSeed -benchtime 1x
func BenchmarkSeed(b *testing.B) {
	const runs = 100_000
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				db := storetest.Open(b, d)
				b.StartTimer()
				start := time.Now()
				if _, err := Seed(context.Background(), db, SeedOptions{Runs: runs, Seed: 1}); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				db.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(runs*b.N)/elapsed.Seconds(), "runs/s")
		})
	}
}
