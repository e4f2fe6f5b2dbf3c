package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/flowsnap/flowsnap/fault"
)

func init() {
	// A limit refusal is a request error: 400 under
	// application/graphql-response+json, 200 under application/json (see
	// requestErrorWriter).
	errcode.RegisterErrorType(string(fault.ComplexityLimit), errcode.KindProtocol)
	errcode.RegisterErrorType(string(fault.Timeout), errcode.KindProtocol)
}

// documentGuard bounds a query document before gqlgen validates it. The
// validator's costs are not linear in the document: the overlapping-fields
// rule compares every pair of fields with one response name in a selection
// set, and fragments spread inside fragments multiply the fields a walk
// visits. So the document is parsed (with the token limit) and measured
// first, each fragment once: its nodes, the fields it expands to, and the
// most fields sharing one response name in a selection set. Documents over a
// limit are refused before validation starts. Documents already in the query
// cache passed this check before and are not parsed again.
//
// Documents not in the cache are parsed and validated a few at a time
// (slots, which large bodies also take to be read and decoded): a flood of
// new or large documents then takes those slots and no more of the
// machine, while the small, cached requests of a dashboard pass by.
type documentGuard struct {
	opts  Options
	cache graphql.Cache[*ast.QueryDocument]
	slots chan struct{}
}

func newDocumentGuard(opts Options, cache graphql.Cache[*ast.QueryDocument], slots chan struct{}) documentGuard {
	return documentGuard{opts: opts, cache: cache, slots: slots}
}

var (
	_ graphql.HandlerExtension          = documentGuard{}
	_ graphql.OperationParameterMutator = documentGuard{}
)

func (documentGuard) ExtensionName() string { return "DocumentGuard" }

func (documentGuard) Validate(graphql.ExecutableSchema) error { return nil }

// slot waits for a parsing slot (see takeSlot).
func (g documentGuard) slot(ctx context.Context) *gqlerror.Error {
	if !takeSlot(ctx, g.slots) {
		return timeoutError(ctx, g.opts)
	}
	return nil
}

// heavyBody is the request body size from which reading and decoding it
// takes a slot: a dashboard's requests are far smaller.
const heavyBody = 64 << 10

// takeSlot waits for one of slots for ctx's request, held until the
// request ends or its response is made; false when ctx ended first. A
// request takes at most one.
func takeSlot(ctx context.Context, slots chan struct{}) bool {
	rec := recordOf(ctx)
	rec.mu.Lock()
	held := rec.release != nil
	rec.mu.Unlock()
	if held {
		return true
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	rec.mu.Lock()
	rec.release = func() { <-slots }
	rec.mu.Unlock()
	return true
}

func (g documentGuard) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if err := ctx.Err(); err != nil {
		return timeoutError(ctx, g.opts)
	}
	if _, ok := g.cache.Get(ctx, params.Query); ok {
		return nil
	}
	if err := g.slot(ctx); err != nil {
		return err
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, g.opts.MaxTokens)
	if err != nil {
		// Reported here, so that gqlgen does not parse it again.
		var gqlErr *gqlerror.Error
		if !errors.As(err, &gqlErr) {
			gqlErr = gqlerror.Errorf("the document could not be parsed")
		}
		errcode.Set(gqlErr, errcode.ParseFailed)
		return gqlErr
	}
	m := measureDocument(doc, g.opts.MaxFields)
	switch {
	case m.nodes > g.opts.MaxNodes:
		return refuse(ctx, "size", "the document has %d fields, fragments and directives, more than the limit of %d", m.nodes, g.opts.MaxNodes)
	case m.fields > g.opts.MaxFields:
		return refuse(ctx, "size", "the operation expands to more than %d fields once its fragments are spread", g.opts.MaxFields)
	case m.sameName > g.opts.MaxSameName:
		return refuse(ctx, "size", "a selection set holds %d fields named %q, more than the limit of %d", m.sameName, m.sameNameOf, g.opts.MaxSameName)
	}
	return nil
}

// documentMeasure is what measureDocument finds.
type documentMeasure struct {
	// nodes counts fields, inline fragments, fragment spreads and directives
	// as written.
	nodes int
	// fields counts the fields of the whole document with every spread
	// expanded, saturating just past the limit.
	fields int
	// sameName is the most fields sharing one response name in one
	// selection set, spreads and inline fragments merged in.
	sameName   int
	sameNameOf string
}

// measureDocument measures doc in time linear in its size: each fragment's
// expansion is computed once and reused at every spread of it. Fragment
// cycles count as empty here; validation refuses them.
func measureDocument(doc *ast.QueryDocument, fieldLimit int) documentMeasure {
	w := measureWalk{
		doc:       doc,
		limit:     fieldLimit + 1,
		fragments: map[string]*fragmentMeasure{},
	}
	for _, op := range doc.Operations {
		w.nodes += len(op.Directives)
		w.fields = saturate(w.fields+w.expanded(op.SelectionSet), w.limit)
	}
	for _, f := range doc.Fragments {
		w.nodes += len(f.Directives)
		w.fragment(f.Name)
	}
	return w.documentMeasure
}

type fragmentMeasure struct {
	done   bool
	fields int
	names  map[string]int
}

type measureWalk struct {
	documentMeasure
	doc       *ast.QueryDocument
	limit     int
	fragments map[string]*fragmentMeasure
}

func saturate(n, limit int) int { return min(n, limit) }

// fragment measures the named fragment once; a spread met while it is
// being measured (a cycle) or of an unknown fragment counts as empty.
func (w *measureWalk) fragment(name string) *fragmentMeasure {
	if m, ok := w.fragments[name]; ok {
		if !m.done {
			return &fragmentMeasure{}
		}
		return m
	}
	m := &fragmentMeasure{}
	w.fragments[name] = m
	def := w.doc.Fragments.ForName(name)
	if def != nil {
		m.names = map[string]int{}
		m.fields = w.set(def.SelectionSet, m.names)
	}
	m.done = true
	return m
}

// expanded measures a selection set that starts a new merge scope (the
// operation, or a field's sub-selection) and returns its expanded fields.
func (w *measureWalk) expanded(set ast.SelectionSet) int {
	names := map[string]int{}
	n := w.set(set, names)
	for name, c := range names {
		if c > w.sameName {
			w.sameName, w.sameNameOf = c, name
		}
	}
	return n
}

// set adds the response names of set (spreads and inline fragments merged
// in) to names and returns its expanded field count.
func (w *measureWalk) set(set ast.SelectionSet, names map[string]int) int {
	fields := 0
	for _, sel := range set {
		w.nodes++
		switch s := sel.(type) {
		case *ast.Field:
			w.nodes += len(s.Directives)
			name := s.Alias
			if name == "" {
				name = s.Name
			}
			names[name] = saturate(names[name]+1, w.limit)
			fields = saturate(fields+1+w.expanded(s.SelectionSet), w.limit)
		case *ast.InlineFragment:
			w.nodes += len(s.Directives)
			fields = saturate(fields+w.set(s.SelectionSet, names), w.limit)
		case *ast.FragmentSpread:
			w.nodes += len(s.Directives)
			m := w.fragment(s.Name)
			for name, c := range m.names {
				names[name] = saturate(names[name]+c, w.limit)
			}
			fields = saturate(fields+m.fields, w.limit)
		}
	}
	return fields
}

// refuse records a refusal for the request's log line and metric and
// returns it as a COMPLEXITY_LIMIT request error.
func refuse(ctx context.Context, reason, format string, args ...any) *gqlerror.Error {
	msg := fmt.Sprintf(format, args...)
	recordOf(ctx).refuse(reason, fault.ComplexityLimit, msg)
	return &gqlerror.Error{
		Message:    msg,
		Extensions: map[string]any{"code": string(fault.ComplexityLimit), "limit": reason},
	}
}

func timeoutError(ctx context.Context, opts Options) *gqlerror.Error {
	msg := fmt.Sprintf("the operation did not finish within %s", opts.Timeout)
	if errors.Is(ctx.Err(), context.Canceled) {
		msg = "the request was cancelled"
	}
	recordOf(ctx).refuse("timeout", fault.Timeout, msg)
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": string(fault.Timeout)}}
}

// cappedRules returns gqlparser's default rules with the errors of one
// validation capped at max: past it, the rules go on (their work is bounded
// by documentGuard) but their errors are dropped, not kept.
func cappedRules(max int) func() *rules.Rules {
	return func() *rules.Rules {
		r := rules.NewDefaultRules()
		kept := 0
		for name, fn := range r.GetInner() {
			r.ReplaceRule(name, func(obs *core.Events, addError core.AddErrFunc) {
				fn(obs, func(options ...core.ErrorOption) {
					if kept < max {
						kept++
						addError(options...)
					}
				})
			})
		}
		return r
	}
}
