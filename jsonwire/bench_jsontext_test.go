//go:build goexperiment.jsonv2

package jsonwire

import (
	"bytes"
	"encoding/json/jsontext"
	"io"
	"testing"
)

// With GOEXPERIMENT=jsonv2 the benchmarks compare with encoding/json/jsontext
// too: go test ./jsonwire -run '^$' -bench . (with the experiment set).

func BenchmarkValidJSONText(b *testing.B) {
	b.SetBytes(int64(len(benchState)))
	for b.Loop() {
		if !jsontext.Value(benchState).IsValid() {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkTopLevelValueJSONText(b *testing.B) {
	for b.Loop() {
		dec := jsontext.NewDecoder(bytes.NewReader(benchState))
		if _, err := dec.ReadToken(); err != nil {
			b.Fatal(err)
		}
		found := false
		for dec.PeekKind() != '}' {
			k, err := dec.ReadToken()
			if err != nil {
				b.Fatal(err)
			}
			name := k.String()
			v, err := dec.ReadValue()
			if err != nil {
				b.Fatal(err)
			}
			if name == "flowName" && len(v) > 0 {
				found = true
			}
		}
		if !found {
			b.Fatal("not found")
		}
	}
}

func BenchmarkCountValuesJSONText(b *testing.B) {
	for b.Loop() {
		dec := jsontext.NewDecoder(bytes.NewReader(benchIDs))
		n := 0
		for {
			_, err := dec.ReadToken()
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
}
