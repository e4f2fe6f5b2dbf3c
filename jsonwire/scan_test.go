package jsonwire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// referenceTopLevel is what encoding/json makes of doc's top level.
func referenceTopLevel(doc []byte, key string) (val []byte, found, object bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil || bytes.TrimSpace(doc)[0] != '{' {
		return nil, false, false
	}
	v, ok := m[key]
	return v, ok, true
}

var stateSeeds = []string{
	`{"flowName":"a"}`,
	` { "input" : {"flowName":"inner"} , "flowName" : "outer" } `,
	`{"flowName":"first","flowName":"last"}`,
	`{"flow\u004eame":"escaped"}`,
	`{"x":"}\"{","flowName":"after a tricky string"}`,
	`{"x":[1,{"flowName":"no"},"]"],"y":-1.5e3,"z":true,"w":null}`,
	`{"flowName":7}`,
	`{"other":"x"}`,
	`[{"flowName":"in an array"}]`,
	`"flowName"`,
	`{}`,
	`{"flowName":"a\"b"}`,
	`{"flowName":"caf\u00e9"}`,
	`{"flowName":"tab\tand\\slash"}`,
	`{"flowName":""}`,
}

func TestTopLevelValueAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range stateSeeds {
		checkTopLevel(t, []byte(doc))
	}
}

func FuzzTopLevelValue(f *testing.F) {
	for _, doc := range stateSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		checkTopLevel(t, doc)
	})
}

func checkTopLevel(t *testing.T, doc []byte) {
	t.Helper()
	start, end, found, object := TopLevelValue(doc, "flowName")
	val := doc[start:end]
	wantVal, wantFound, wantObject := referenceTopLevel(doc, "flowName")
	if found != wantFound || object != wantObject || !bytes.Equal(bytes.TrimSpace(val), bytes.TrimSpace(wantVal)) {
		t.Errorf("%s: got (%s, %v, %v), encoding/json (%s, %v, %v)", doc, val, found, object, wantVal, wantFound, wantObject)
	}
}

// countValuesByteByByte is CountValues as it read every byte of a string,
// skipping the one after each backslash: what the quick skip of strings
// must count alike, on any input.
func countValuesByteByByte(b []byte) int {
	n, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == ',' || c == '[' || c == '{':
			n++
		}
	}
	return n
}

func FuzzCountValues(f *testing.F) {
	for _, doc := range append(stateSeeds, `"\\"`, `"\\\"",[`, `{"a":"\\\\\"]"}`, `"unclosed,[`, `\"`, `"a\`) {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if got, want := CountValues(doc), countValuesByteByByte(doc); got != want {
			t.Errorf("%q: CountValues %d, byte by byte %d", doc, got, want)
		}
	})
}
