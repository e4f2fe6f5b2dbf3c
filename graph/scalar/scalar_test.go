package scalar

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
)

func TestDateTime(t *testing.T) {
	var b bytes.Buffer
	MarshalDateTime(snapshot.Millis(1_764_470_802_123)).MarshalGQL(&b)
	if b.String() != `"2025-11-30T02:46:42.123Z"` {
		t.Fatalf("marshalled %s", b.String())
	}
	good := map[string]snapshot.Millis{
		"2025-11-30T02:46:42.123Z":      1_764_470_802_123,
		"2025-11-30T03:46:42.123+01:00": 1_764_470_802_123,
		"1970-01-01T00:00:00Z":          0,
	}
	for in, want := range good {
		if got, err := UnmarshalDateTime(in); err != nil || got != want {
			t.Errorf("UnmarshalDateTime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []any{"yesterday", "2025-11-30T02:46:42.1234Z", "1969-12-31T23:59:59Z", "2025-11-30", int64(5), nil} {
		if _, err := UnmarshalDateTime(in); err == nil {
			t.Errorf("UnmarshalDateTime(%v) accepted it", in)
		}
	}
}

// TestDateTimeIsTheLayout writes times across the whole range as the
// layout formats them: padded fields, every millisecond, years after 9999.
func TestDateTimeIsTheLayout(t *testing.T) {
	ms := []int64{0, 1, 999, 1000, 59_999, 86_399_999, 951_782_400_000, 1_764_470_802_123,
		253_402_300_799_999, 253_402_300_800_000, vocab.MaxSafe}
	for i := int64(0); i < 2000; i++ {
		ms = append(ms, (i*7_919_000_003_917+i*i*104_729)%(vocab.MaxSafe+1))
	}
	// Each day's last millisecond and a time within it: every day from
	// 1970 to 2200, then every 97th to past 9999, leap days and century
	// years among them.
	for day := int64(1); day <= 2_932_900; day++ {
		if day > 84_000 {
			day += 96
		}
		ms = append(ms, day*86_400_000-1, day*86_400_000+43_210_987)
	}
	for _, m := range ms {
		want := `"` + time.UnixMilli(m).UTC().Format(dateTimeLayout) + `"`
		if got := string(AppendDateTime(nil, snapshot.Millis(m))); got != want {
			t.Fatalf("AppendDateTime(%d) = %s, want %s", m, got, want)
		}
	}
}

func TestSafeInt(t *testing.T) {
	var b bytes.Buffer
	MarshalSafeInt(vocab.MaxSafe).MarshalGQL(&b)
	if b.String() != "9007199254740991" {
		t.Fatalf("marshalled %s", b.String())
	}
	for _, in := range []any{int64(0), int64(vocab.MaxSafe), json.Number("42"), float64(7), "12"} {
		if _, err := UnmarshalSafeInt(in); err != nil {
			t.Errorf("UnmarshalSafeInt(%v): %v", in, err)
		}
	}
	for _, in := range []any{int64(-1), int64(vocab.MaxSafe + 1), json.Number("1.5"), float64(1.5), "x", true, nil} {
		if _, err := UnmarshalSafeInt(in); err == nil {
			t.Errorf("UnmarshalSafeInt(%v) accepted it", in)
		}
	}
}

func TestJSONPassesThroughUnchanged(t *testing.T) {
	raw := json.RawMessage(`{"b":1,"a":[true,null,"x"],"n":1.50}`)
	var b bytes.Buffer
	MarshalJSON(raw).MarshalGQL(&b)
	if b.String() != string(raw) {
		t.Fatalf("marshalled %s", b.String())
	}
	b.Reset()
	MarshalJSON(nil).MarshalGQL(&b)
	if b.String() != "null" {
		t.Fatalf("nil marshalled as %s", b.String())
	}
	got, err := UnmarshalJSON(map[string]any{"k": []any{1.0, "v"}})
	if err != nil || string(got) != `{"k":[1,"v"]}` {
		t.Fatalf("UnmarshalJSON = %s, %v", got, err)
	}
}

func TestEnumsAreSpelledInUpperCase(t *testing.T) {
	for _, c := range []struct {
		m    interface{ MarshalGQL(io.Writer) }
		want string
	}{
		{MarshalRunStatus(vocab.StatusRunning), `"RUNNING"`},
		{MarshalStepState(snapshot.StepTimedOut), `"TIMED_OUT"`},
		{MarshalResultType(vocab.ResultJSON), `"JSON"`},
		{MarshalRunEventType("unheard_of"), `"UNHEARD_OF"`},
		{MarshalRunOrder(snapshot.OldestFirst), `"OLDEST_FIRST"`},
	} {
		var b bytes.Buffer
		c.m.MarshalGQL(&b)
		if b.String() != c.want {
			t.Errorf("marshalled %s, want %s", b.String(), c.want)
		}
	}
	if s, err := UnmarshalStepState("TIMED_OUT"); err != nil || s != snapshot.StepTimedOut {
		t.Errorf("UnmarshalStepState(TIMED_OUT) = %q, %v", s, err)
	}
	for _, in := range []any{"timed_out", "Running", "ASLEEP", 3, nil} {
		if _, err := UnmarshalRunStatus(in); err == nil {
			t.Errorf("UnmarshalRunStatus(%v) accepted it", in)
		}
	}
	if _, err := UnmarshalRunOrder("SIDEWAYS"); err == nil {
		t.Error("UnmarshalRunOrder(SIDEWAYS) accepted it")
	}
}
