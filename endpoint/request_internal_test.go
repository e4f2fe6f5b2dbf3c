package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTheLogLimiterLetsTenLinesASecondPerReasonAndCountsTheRest(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000, 0)
	l := newLogLimiter(10)
	l.now = func() time.Time { return now }
	written := 0
	for range 30_000 {
		if ok, _ := l.allow("store"); ok {
			written++
		}
	}
	if written != 10 {
		t.Fatalf("%d lines written in one second, want 10", written)
	}
	if ok, _ := l.allow("parse"); !ok {
		t.Fatal("another reason was held back by the first one's limit")
	}
	now = now.Add(time.Second)
	ok, suppressed := l.allow("store")
	if !ok || suppressed != 30_000-10 {
		t.Fatalf("the next second's first line: written %v, suppressed %d, want %d", ok, suppressed, 30_000-10)
	}
}

func FuzzRequestMembers(f *testing.F) {
	for _, seed := range []string{
		`{"query":"{ a }"}`,
		` { "query" : "q", "variables" : {"id": "x", "n": [1, {"a": "}"}]}, "extensions": null } `,
		`{"QUERY":"upper","Query":"mixed","query":"last"}`,
		`{"operationName":"A","operationname":"B","variables":{},"Extensions":{"persistedQuery":{"sha256Hash":"00"}}}`,
		`{"qu\u0065ry":"escaped key","x":[true,false,null,-1.5e3,"\"\\"]}`,
		`{"extenſions":{"minRevision":3}}`,
		`{}`, `null`, ` null `, `[]`, `"query"`, `12`, `true`, `{"query":1}`, `{"a":{"b":{"c":[[],{}]}},"query":"q"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		var want struct {
			Query         json.RawMessage `json:"query"`
			OperationName json.RawMessage `json:"operationName"`
			Variables     json.RawMessage `json:"variables"`
			Extensions    json.RawMessage `json:"extensions"`
		}
		err := json.Unmarshal(body, &want)
		got, ok := requestMembers(body)
		if ok != (err == nil) {
			t.Fatalf("%q: ok %v, encoding/json %v", body, ok, err)
		}
		if !ok {
			return
		}
		for _, m := range [][2]json.RawMessage{{got.query, want.Query}, {got.operationName, want.OperationName}, {got.variables, want.Variables}, {got.extensions, want.Extensions}} {
			if !bytes.Equal(m[0], m[1]) {
				t.Fatalf("%q: %q, encoding/json %q", body, m[0], m[1])
			}
		}
	})
}

// BenchmarkRequestMembers finds the members of a batch query's body,
// beside unmarshalling them with encoding/json.
func BenchmarkRequestMembers(b *testing.B) {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("run-%07d", i*37))
	}
	body := []byte(`{"query":"query Runs($ids: [ID!]!) { runs(ids: $ids) { __typename ... on Run { id status flowName createdAt } } }","operationName":"Runs","variables":{"ids":[` + strings.Join(ids, ",") + `]}}`)
	b.Run("jsonwire", func(b *testing.B) {
		for b.Loop() {
			if _, ok := requestMembers(body); !ok {
				b.Fatal("not an object")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var req struct {
				Query         json.RawMessage `json:"query"`
				OperationName json.RawMessage `json:"operationName"`
				Variables     json.RawMessage `json:"variables"`
				Extensions    json.RawMessage `json:"extensions"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRequestShape checks the body of a long query as clients send
// it, lines broken and indented, each escape a few dozen bytes apart.
func BenchmarkRequestShape(b *testing.B) {
	var q strings.Builder
	for range 40 {
		q.WriteString("\t\t... on Run { __typename id revision status flowName state createdAt }\n")
	}
	body, err := json.Marshal(map[string]any{"query": q.String(), "variables": map[string]any{"id": "run-0000001"}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, msg := requestShape(body, 1<<20, 1000); msg != "" {
			b.Fatal(msg)
		}
	}
}
