package jsonwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// The documents the benchmarks read: a run's state as the seeder writes it,
// and the variables of a batch of 100 run ids.
var (
	benchState = []byte(`{"flowName":"checkout","input":{"orderId":"order-001234","items":[{"sku":"sku-17","qty":2,"price":12.5},{"sku":"sku-3","qty":1,"price":99}],"express":true},"output":{"status":"shipped","trackingId":"trk-9f8e7d","notes":null}}`)
	benchIDs   = func() []byte {
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = fmt.Sprintf("%q", fmt.Sprintf("run-%07d", i*37))
		}
		return []byte(`{"ids":[` + strings.Join(ids, ",") + `]}`)
	}()
)

// BenchmarkTopLevelValue finds a state's flowName, beside unmarshalling
// the member with encoding/json.
func BenchmarkTopLevelValue(b *testing.B) {
	b.Run("jsonwire", func(b *testing.B) {
		for b.Loop() {
			if _, _, found, _ := TopLevelValue(benchState, "flowName"); !found {
				b.Fatal("not found")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var s struct {
				FlowName json.RawMessage `json:"flowName"`
			}
			if err := json.Unmarshal(benchState, &s); err != nil || s.FlowName == nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPlainObject decodes a batch's variables, beside a json.Decoder
// with UseNumber, which decodes them otherwise.
func BenchmarkPlainObject(b *testing.B) {
	b.Run("jsonwire", func(b *testing.B) {
		for b.Loop() {
			if _, ok := PlainObject(benchIDs); !ok {
				b.Fatal("left to encoding/json")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(benchIDs))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCountValues counts the values of a batch's variables, beside
// counting them as encoding/json's tokens.
func BenchmarkCountValues(b *testing.B) {
	b.Run("jsonwire", func(b *testing.B) {
		for b.Loop() {
			if CountValues(benchIDs) < 100 {
				b.Fatal("too few")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(benchIDs))
			n := 0
			for {
				_, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n < 100 {
				b.Fatal("too few")
			}
		}
	})
}
