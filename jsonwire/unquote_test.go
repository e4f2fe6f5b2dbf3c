package jsonwire

import (
	"encoding/json"
	"strings"
	"testing"
)

var unquoteSeeds = []string{
	`""`, `"query { run(id: \"a\") { id } }"`, `"a\nb\tc\r\\d\/e\bf\fg"`, `"\u0041\u00e9\u2028"`,
	`"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"é"`, "\"\xff\"", `"\x"`, `"\u12"`, `"a"b"`, `"a`, `a"`,
	"\"\t\"", `"\`, `"\"`, `"\u004G"`, `12`, `null`, `"a\né\tb"`, "\"a\\n\xffb\"", "\"a\xed\xa0\x80\\t\"",
}

// TestUnquoteAgreesWithEncodingJSON holds Unquote to json.Unmarshal into a
// string, on the seeds of FuzzUnquote.
func TestUnquoteAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range unquoteSeeds {
		unquoteAgrees(t, []byte(s))
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range unquoteSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(unquoteAgrees)
}

// unquoteAgrees checks Unquote against encoding/json on raw; what Unquote
// takes is a string literal alone, without null or spaces around it.
func unquoteAgrees(t *testing.T, raw []byte) {
	var want string
	err := json.Unmarshal(raw, &want)
	literal := len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"'
	got, ok := Unquote(raw)
	if ok != (err == nil && literal) || ok && got != want {
		t.Errorf("%q: Unquote says %q, %v; encoding/json %q, %v", raw, got, ok, want, err)
	}
}

// BenchmarkUnquote unquotes a query as clients send it, its lines broken
// and indented: escapes every few dozen bytes.
func BenchmarkUnquote(b *testing.B) {
	var query strings.Builder
	for range 40 {
		query.WriteString("\t\t... on Run { __typename id revision status flowName state createdAt }\n")
	}
	raw, err := json.Marshal(query.String())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, ok := Unquote(raw); !ok {
			b.Fatal("not unquoted")
		}
	}
}
