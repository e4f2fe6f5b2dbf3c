package jsonwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var plainObjectSeeds = []string{
	`{"ids":["run-0001","run-0002","run-0002"]}`,
	` { "id" : "a" , "n" : -1.5e+3, "z": 0, "b": [true, false, null, [], {}], "o": {"o": {"x": ""}} } `,
	`{"a":1,"a":"last"}`,
	`{}`,
	`{"é":"café","日本":["語"]}`,
	`{"esc":"a\"b"}`,
	`{"esc\u0041":1}`,
	`{"tab":"\t"}`,
	`{"a":[1,2,[3,[4,{"b":"}"}]]]}`,
	`[{"a":1}]`,
	`"a"`,
	`null`,
	`{"":""}`,
}

// TestPlainObjectTakesRequestsVariables holds the fast decoding to the
// variables requests send, so that it is not left unused unnoticed.
func TestPlainObjectTakesRequestsVariables(t *testing.T) {
	for _, doc := range []string{
		`{"ids":["run-0001","run-0002"]}`,
		`{"id":"run-1","first":100,"after":null,"filter":{"status":["RUNNING","FAILED"],"flowName":"billing"}}`,
		`{}`,
	} {
		if _, ok := PlainObject([]byte(doc)); !ok {
			t.Errorf("%s: left to encoding/json", doc)
		}
		checkPlainObject(t, []byte(doc))
	}
}

func TestPlainObjectAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range plainObjectSeeds {
		checkPlainObject(t, []byte(doc))
	}
	// The object and the lists within it: as deep as encoding/json takes,
	// then one deeper.
	nested := func(lists int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", lists) + strings.Repeat("]", lists) + `}`)
	}
	if _, ok := PlainObject(nested(maxPlainDepth - 1)); !ok {
		t.Error("nesting as deep as encoding/json takes was left to it")
	}
	checkPlainObject(t, nested(maxPlainDepth-1))
	if _, ok := PlainObject(nested(maxPlainDepth)); ok {
		t.Error("nesting deeper than encoding/json takes was decoded")
	}
	if json.Valid(nested(maxPlainDepth)) {
		t.Error("encoding/json takes nesting deeper than maxPlainDepth")
	}
}

func FuzzPlainObject(f *testing.F) {
	for _, doc := range plainObjectSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		checkPlainObject(t, doc)
	})
}

// checkPlainObject checks that what plainObject decodes, a json.Decoder with UseNumber decodes alike.
func checkPlainObject(t *testing.T, doc []byte) {
	t.Helper()
	got, ok := PlainObject(doc)
	if !ok {
		return
	}
	var want map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%s: plainObject %#v, encoding/json %#v (%v)", doc, got, want, err)
	}
}
