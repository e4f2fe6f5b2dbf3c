package snapshot

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

func TestStateScanAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range stateSeeds {
		checkTopLevel(t, []byte(doc))
		checkPlainString(t, []byte(doc))
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
		checkPlainString(t, doc)
	})
}

func checkTopLevel(t *testing.T, doc []byte) {
	t.Helper()
	start, end, found, object := topLevelValue(doc, "flowName")
	val := doc[start:end]
	wantVal, wantFound, wantObject := referenceTopLevel(doc, "flowName")
	if found != wantFound || object != wantObject || !bytes.Equal(bytes.TrimSpace(val), bytes.TrimSpace(wantVal)) {
		t.Errorf("%s: got (%s, %v, %v), encoding/json (%s, %v, %v)", doc, val, found, object, wantVal, wantFound, wantObject)
	}
}

// checkPlainString checks that the name state takes without unmarshalling
// is the one encoding/json reads, for the flowName of doc and for doc
// itself.
func checkPlainString(t *testing.T, doc []byte) {
	t.Helper()
	values := [][]byte{bytes.TrimSpace(doc)}
	if start, end, found, _ := topLevelValue(doc, "flowName"); found {
		values = append(values, doc[start:end])
	}
	for _, v := range values {
		if !plainString(v) {
			continue
		}
		got := string(v[1 : len(v)-1])
		var want string
		if err := json.Unmarshal(v, &want); err != nil || got != want {
			t.Errorf("%s: plainString %q, encoding/json %q (%v)", v, got, want, err)
		}
	}
}
