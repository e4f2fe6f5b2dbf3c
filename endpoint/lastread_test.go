package endpoint_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/endpoint"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// TestReadAheadEndsTheReadWithItsLastStatement sends queries whose reads
// the read-ahead makes itself, level by level, and queries with a read it
// does not make: the first end their read with the statement of their last
// level (snapshot.Read.EndWithNext), the others at End; all answer as
// before, in as many statements, never with an INTERNAL error, whether the
// direct answer or the executor writes them, the first time and from the
// query cache.
func TestReadAheadEndsTheReadWithItsLastStatement(t *testing.T) {
	page := `{ edges { cursor node { ... on Run { id } } } pageInfo { hasNextPage } }`
	cases := []struct {
		name, query string
		ended       bool
		statements  int
		codes       []string
	}{
		// One statement reads the run and its pages (snapshot.Reader.RunsAndPages).
		{name: "a run with its children and rounds", ended: true, statements: 2,
			query: `{ run(id: "round-2") { ... on Run { id children(first: 2) ` + page + ` rounds ` + page + ` } } }`},
		{name: "three levels", ended: true, statements: 4,
			query: `{ run(id: "parent") { ... on Run { children(first: 2) { nodes { ... on Run { id children ` + page + ` } } } } } }`},
		{name: "a parent's children", ended: true, statements: 4,
			query: `{ run(id: "child-001") { ... on Run { parent { ... on Run { id children(first: 3) ` + page + ` } } } } }`},
		// The page's size is refused before anything is read: the read
		// ends at End.
		{name: "a page too large", ended: false, statements: 2, codes: []string{"BAD_USER_INPUT"},
			query: `{ run(id: "parent") { ... on Run { id children(first: 0) ` + page + ` } } }`},
		{name: "two journal pages, the last level", ended: true, statements: 4,
			query: `{ run(id: "waiter") { ... on Run { steps { nodes { __typename } } events { edges { cursor } } } } }`},
		// The steps could have attempts, a level below, but have none.
		{name: "a level that could read and finds nothing", ended: false, statements: 3,
			query: `{ run(id: "waiter") { ... on Run { steps { nodes { ... on RunStep { attempts { number } } } } } } }`},
		{name: "a root field read by its resolver", ended: false, statements: 3,
			query: `{ position { revision } run(id: "parent") { ... on Run { children(first: 2) ` + page + ` } } }`},
		{name: "the change feed", ended: false, statements: 4,
			query: `{ changes(since: 0, first: 2) { changes { run { ... on Run { id children(first: 1) ` + page + ` } } } } }`},
	}
	for _, d := range storetest.Dialects {
		for _, noDirect := range []bool{false, true} {
			name := string(d) + "/direct"
			if noDirect {
				name = string(d) + "/executor"
			}
			t.Run(name, func(t *testing.T) {
				logs := &syncBuffer{}
				e := fixture(t, d, endpoint.Options{NoDirect: noDirect, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						for _, time := range []string{"the first time", "from the query cache"} {
							logs.Reset()
							e.mu.Lock()
							e.stmts = nil
							e.mu.Unlock()
							r := e.do(c.query, nil)
							if !slices.Equal(r.codes(), c.codes) {
								t.Fatalf("%s: codes %v, want %v: %+v", time, r.codes(), c.codes, r.Errors)
							}
							e.mu.Lock()
							stmts := slices.Clone(e.stmts)
							e.mu.Unlock()
							if !slices.Equal(stmts, []int{c.statements}) {
								t.Errorf("%s: statements %v, want [%d]", time, stmts, c.statements)
							}
							if ended := strings.Contains(logs.String(), `"endedWithLast":true`); ended != c.ended {
								t.Errorf("%s: ended with its last statement: %v, want %v", time, ended, c.ended)
							}
						}
					})
				}
			})
		}
	}
}
