package snapshot

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/flowsnap/flowsnap/jsonwire"
)

// stateNames are states whose flowName state takes without unmarshalling
// when it can.
var stateNames = []string{
	`{"flowName":"a"}`,
	` { "input" : {"flowName":"inner"} , "flowName" : "outer" } `,
	`{"flowName":"first","flowName":"last"}`,
	`{"flow\u004eame":"escaped"}`,
	`{"flowName":"a\"b"}`,
	`{"flowName":"caf\u00e9"}`,
	`{"flowName":"tab\tand\\slash"}`,
	`{"flowName":""}`,
	`"flowName"`,
}

func TestStateScanAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range stateNames {
		checkPlainString(t, []byte(doc))
	}
}

func FuzzPlainString(f *testing.F) {
	for _, doc := range stateNames {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		checkPlainString(t, doc)
	})
}

// checkPlainString checks that the name state takes without unmarshalling
// is the one encoding/json reads, for the flowName of doc and for doc
// itself.
func checkPlainString(t *testing.T, doc []byte) {
	t.Helper()
	values := [][]byte{bytes.TrimSpace(doc)}
	if start, end, found, _ := jsonwire.TopLevelValue(doc, "flowName"); found {
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
