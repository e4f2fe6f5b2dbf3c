package jsonwire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// writeSeeds are JSON values as a store may hold them: compact or not,
// with white space inside strings and out, escapes, and the characters a
// response escapes.
var writeSeeds = []string{
	`{"flowName":"import record","input":{"note":"a b\tc"}}`,
	`{ "flowName" : "f" }`, "[1,\n2]", `"a \" b"`, `"a \\" `, `"\\"`, `"<b>&amp;</b>"`,
	"\"line\u2028para\u2029\"", "\"dash \u2014\"", `{"a":"x\"y z"}`, `null`, `12`, `"   "`,
}

// responseJSON is raw as encoding/json writes a json.RawMessage in a
// response: compacted, then HTML-escaped.
func responseJSON(t *testing.T, raw []byte) []byte {
	t.Helper()
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes()
}

func TestAppendJSONWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, doc := range append(append([]string(nil), writeSeeds...), stateSeeds...) {
		if !json.Valid([]byte(doc)) {
			continue
		}
		if got, want := AppendJSON(nil, []byte(doc)), responseJSON(t, []byte(doc)); !bytes.Equal(got, want) {
			t.Errorf("%q: AppendJSON wrote %q, encoding/json %q", doc, got, want)
		}
	}
	// A value compact but for the spaces inside its strings is written
	// as it is: the plain path.
	if !compactPlain([]byte(writeSeeds[0])) {
		t.Errorf("%s is not taken as compact", writeSeeds[0])
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, doc := range append(append(append([]string(nil), writeSeeds...), stateSeeds...), validSeeds...) {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		want := responseJSON(t, doc)
		if got := AppendJSON(nil, doc); !bytes.Equal(got, want) {
			t.Errorf("%q: AppendJSON wrote %q, encoding/json %q", doc, got, want)
		}
		// A value's response form is what a response writes, and its own.
		form := ResponseForm(doc)
		if !bytes.Equal(form, want) {
			t.Errorf("%q: response form %q, encoding/json %q", doc, form, want)
		}
		if again := ResponseForm(form); !bytes.Equal(again, form) {
			t.Errorf("%q: response form %q, of that %q", doc, form, again)
		}
	})
}

// executorQuoted is s as gqlgen's executor writes a String and encoding/json
// then escapes the response holding it.
func executorQuoted(s string) []byte {
	var quoted, escaped bytes.Buffer
	graphql.MarshalString(s).MarshalGQL(&quoted)
	json.HTMLEscape(&escaped, quoted.Bytes())
	return escaped.Bytes()
}

var quoteSeeds = []string{"", "run-1", `a "quoted" \ path`, "tab\tcr\rlf\n", "\x00\x01\x1f\x7f", "<b>&</b>",
	"line\u2028para\u2029", "dash \u2014 and \u20ac", "\xe2\x80", "\xe2", "é ü 日本", "\xff\xfe"}

func TestAppendQuotedWritesWhatTheExecutorWrites(t *testing.T) {
	for _, s := range quoteSeeds {
		if got, want := AppendQuoted(nil, s), executorQuoted(s); !bytes.Equal(got, want) {
			t.Errorf("%q: AppendQuoted wrote %q, the executor %q", s, got, want)
		}
	}
}

func FuzzAppendQuoted(f *testing.F) {
	for _, s := range quoteSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendQuoted(nil, s), executorQuoted(s); !bytes.Equal(got, want) {
			t.Errorf("%q: AppendQuoted wrote %q, the executor %q", s, got, want)
		}
	})
}
