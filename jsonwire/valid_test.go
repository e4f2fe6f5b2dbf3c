package jsonwire

import (
	"encoding/json"
	"strings"
	"testing"
)

// validSeeds are documents at the edges of JSON's grammar, valid or not.
var validSeeds = []string{
	``, ` `, `0`, `-0`, `-`, `01`, `-01`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `1e+07`, `-1.5e3`, `+1`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NaN`,
	`""`, `"`, `"\"`, `"\\"`, `"\/"`, `"\u00e9"`, `"\u00G9"`, `"\u12"`, `"\x"`, "\"a\x01\"", "\"a\x7f\"", "\"\xff\xfe\"", "\"tab\there\"",
	`{}`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{"a" : 1 , "b" : [ ] }`, `{1:2}`,
	`[]`, `[`, `[1,]`, `[,1]`, `[1 2]`, ` [ 1 , [ 2 , { } ] ] `, `[1]]`, `[1]x`,
	" \t\n\r{\"flowName\":\"f\"}\r\n", "\v1", "\u00a01",
	`{"flowName":"a","input":{"x":[1,2.5,-3e2,true,false,null,"s"]}}`,
}

func TestValidJSONIsJSONValid(t *testing.T) {
	docs := append([]string(nil), validSeeds...)
	docs = append(docs, stateSeeds...)
	// encoding/json's nesting limit, both sides of it.
	for _, n := range []int{maxDepth, maxDepth + 1} {
		docs = append(docs, strings.Repeat("[", n)+strings.Repeat("]", n),
			strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	}
	for _, doc := range docs {
		if got, want := Valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
			t.Errorf("%.60q: validJSON %v, json.Valid %v", doc, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, doc := range append(append([]string(nil), validSeeds...), stateSeeds...) {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if got, want := Valid(doc), json.Valid(doc); got != want {
			t.Errorf("%q: validJSON %v, json.Valid %v", doc, got, want)
		}
	})
}

// BenchmarkValidJSON checks a run's state as the seeder writes it, beside
// json.Valid on the same bytes.
func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"flowName":"checkout","input":{"orderId":"order-001234","items":[{"sku":"sku-17","qty":2,"price":12.5},{"sku":"sku-3","qty":1,"price":99}],"express":true},"output":{"status":"shipped","trackingId":"trk-9f8e7d","notes":null}}`)
	b.Run("jsonwire", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if !Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if !json.Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
}
