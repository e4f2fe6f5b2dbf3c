package gcpace_test

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/flowsnap/flowsnap/gcpace"
)

// TestSetKeepsTheEnvironmentsGOGCUnlessTold sets the percent with and
// without GOGC in the environment, and with an explicit percent.
func TestSetKeepsTheEnvironmentsGOGCUnlessTold(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	for _, c := range []struct {
		name     string
		gogc     string
		percent  int
		explicit bool
		want     int // the percent in force after
		applied  bool
	}{
		{name: "no GOGC: the default", percent: gcpace.DefaultPercent, want: gcpace.DefaultPercent, applied: true},
		{name: "GOGC kept over the default", gogc: "150", percent: gcpace.DefaultPercent, want: 150},
		{name: "GOGC=off kept", gogc: "off", percent: gcpace.DefaultPercent, want: -1},
		{name: "an explicit percent over GOGC", gogc: "150", percent: 300, explicit: true, want: 300, applied: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			if got := gcpace.Set(env(c.gogc), c.percent, c.explicit); got != c.want {
				t.Errorf("Set = %d, want %d", got, c.want)
			}
			inForce := debug.SetGCPercent(100)
			if c.applied && inForce != c.want || !c.applied && inForce != 100 {
				t.Errorf("the runtime's percent is %d", inForce)
			}
		})
	}
}

// TestLimitKeepsTheEnvironmentsGOMEMLIMIT sets the soft memory limit with
// and without GOMEMLIMIT in the environment.
func TestLimitKeepsTheEnvironmentsGOMEMLIMIT(t *testing.T) {
	was := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	env := func(limit string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return limit
			}
			return ""
		}
	}
	for _, c := range []struct {
		name  string
		env   string
		start int64 // the limit in force before, as GOMEMLIMIT set it
		want  int64
	}{
		{name: "no GOMEMLIMIT: the default", start: math.MaxInt64, want: gcpace.DefaultMemoryLimit},
		{name: "GOMEMLIMIT kept over the default", env: "1GiB", start: 1 << 30, want: 1 << 30},
		{name: "GOMEMLIMIT=off kept", env: "off", start: math.MaxInt64, want: math.MaxInt64},
	} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetMemoryLimit(c.start)
			if got := gcpace.Limit(env(c.env)); got != c.want {
				t.Errorf("Limit = %d, want %d", got, c.want)
			}
			if inForce := debug.SetMemoryLimit(-1); inForce != c.want {
				t.Errorf("the runtime's limit is %d, want %d", inForce, c.want)
			}
		})
	}
}

// TestTheDefaultLimitFollowsWhatIsLive holds more live heap than the
// default limit, and checks that the limit rises to twice it, so that the
// collector does not run continuously; a small live heap keeps the default.
func TestTheDefaultLimitFollowsWhatIsLive(t *testing.T) {
	was := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	if got := gcpace.LimitFor(1 << 20); got != gcpace.DefaultMemoryLimit {
		t.Errorf("LimitFor(1 MiB) = %d, want the default %d", got, gcpace.DefaultMemoryLimit)
	}
	if got := gcpace.LimitFor(100 << 20); got != 200<<20 {
		t.Errorf("LimitFor(100 MiB) = %d, want 200 MiB", got)
	}
	if got := gcpace.LimitFor(math.MaxUint64); got <= 0 {
		t.Errorf("LimitFor(max) = %d, want a positive limit", got)
	}
	held := make([][]byte, 48)
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	limit := gcpace.Follow()
	runtime.KeepAlive(held)
	if limit < 2*48<<20 {
		t.Errorf("with 48 MiB live the limit is %d, want at least 96 MiB", limit)
	}
	if inForce := debug.SetMemoryLimit(-1); inForce != limit {
		t.Errorf("the runtime's limit is %d, want %d", inForce, limit)
	}
}
