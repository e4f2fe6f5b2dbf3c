package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/flowsnap/flowsnap/endpoint/record"
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
// Documents not in the cache are parsed and validated in a parsePool's
// few slots, which large bodies also take to be read and decoded.
type documentGuard struct {
	opts   Options
	cache  graphql.Cache[*ast.QueryDocument]
	pool   *parsePool
	schema *ast.Schema
}

func newDocumentGuard(opts Options, cache graphql.Cache[*ast.QueryDocument], pool *parsePool, schema *ast.Schema) documentGuard {
	return documentGuard{opts: opts, cache: cache, pool: pool, schema: schema}
}

var (
	_ graphql.HandlerExtension          = documentGuard{}
	_ graphql.OperationParameterMutator = documentGuard{}
)

func (documentGuard) ExtensionName() string { return "DocumentGuard" }

func (documentGuard) Validate(graphql.ExecutableSchema) error { return nil }

// slot waits for a parsing slot (see parsePool.take).
func (g documentGuard) slot(ctx context.Context) *gqlerror.Error {
	switch g.pool.take(ctx) {
	case slotBusy:
		return busyError(ctx)
	case slotEnded:
		return timeoutError(ctx, g.opts)
	}
	return nil
}

// heavyBody is the request body size from which reading and decoding it
// takes a slot: a dashboard's requests are far smaller.
const heavyBody = 64 << 10

// parsePool admits the work whose cost a request chooses — parsing and
// validating a document not in the query cache, reading and decoding a
// large body — a few requests at a time, so that a flood of such requests
// takes those slots and no more of the machine, while the small, cached
// requests of a dashboard pass by. A slot, once given back, rests for a
// time in proportion to how long it was held (the duty cycle), which keeps
// the slots' work to a share of each CPU even when they never stand empty.
// Requests wait for a slot in a bounded queue, until their deadline or
// their client leaves; past the queue's length they are refused at once as
// busy.
type parsePool struct {
	slots   chan struct{}
	queue   int64
	waiting atomic.Int64
	// rest is how long a slot rests per unit of time it was held.
	rest float64
}

func newParsePool(opts Options) *parsePool {
	return &parsePool{
		slots: make(chan struct{}, opts.MaxParsing),
		queue: int64(opts.MaxParsingQueue),
		rest:  float64(100-opts.ParsingDutyPercent) / float64(opts.ParsingDutyPercent),
	}
}

// maxRest bounds one slot's rest, whatever it was held for (a slow client
// sending a large body holds its slot without using the CPU).
const maxRest = 250 * time.Millisecond

type slotResult int

const (
	slotTaken slotResult = iota
	slotBusy             // the queue is full
	slotEnded            // the request's context ended first
)

// take waits for a slot for ctx's request, held until the request ends or
// its response is made. A request takes at most one.
func (p *parsePool) take(ctx context.Context) slotResult {
	rec := record.Of(ctx)
	if rec.HoldsSlot() {
		return slotTaken
	}
	select {
	case p.slots <- struct{}{}:
	default:
		if p.waiting.Add(1) > p.queue {
			p.waiting.Add(-1)
			return slotBusy
		}
		select {
		case p.slots <- struct{}{}:
			p.waiting.Add(-1)
		case <-ctx.Done():
			p.waiting.Add(-1)
			return slotEnded
		}
	}
	start := time.Now()
	rec.HoldSlot(func() { p.give(time.Since(start)) })
	return slotTaken
}

// give hands back a slot held for held, after its rest.
func (p *parsePool) give(held time.Duration) {
	rest := min(time.Duration(float64(held)*p.rest), maxRest)
	if rest < 50*time.Microsecond {
		<-p.slots
		return
	}
	time.AfterFunc(rest, func() { <-p.slots })
}

// busyError refuses a request that found the parsing queue full: a 503
// (see statusWriter) with Retry-After, code TIMEOUT.
func busyError(ctx context.Context) *gqlerror.Error {
	const msg = "the server is busy with other new documents: retry shortly"
	rec := record.Of(ctx)
	rec.Refuse("busy", fault.Timeout, msg)
	rec.SetBusy(http.StatusServiceUnavailable)
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": string(fault.Timeout)}}
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
	if err := g.prescan(ctx, params.Query); err != nil {
		return err
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, g.opts.MaxTokens)
	if ctx.Err() != nil {
		// The client left or the time is up: validation would be wasted.
		return timeoutError(ctx, g.opts)
	}
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

// prescan reads query's tokens, without building its tree, and refuses it
// as soon as it is seen to cross a limit: its tokens (comments included),
// its nodes as written, or the fields of one name written in one selection
// set; a directive the schema does not know, or one not repeatable written
// twice at one place; and, for a document of one operation, its aliases.
// It finds no more than the later checks would (a selection set's own
// fields are fewer than those merged into it; every fragment of a valid
// document is spread at least once), so it refuses nothing they would
// pass; what it saves is the tree of a document that would be refused,
// which cost milliseconds and megabytes to build and validate. A document
// that does not lex is left to the parser to report.
func (g documentGuard) prescan(ctx context.Context, query string) *gqlerror.Error {
	type nameInSet struct {
		set  int
		name string
	}
	lex := lexer.New(&ast.Source{Input: query})
	var (
		tokens, nodes, parens int
		sets                  []int // the selection sets open, innermost last
		opened                int
		prev, prev2           lexer.Token
		names                 map[nameInSet]int
		// here holds the directives written at the current place.
		here                           []string
		aliases, operations, fragments int
		inFragment                     bool
	)
	invalid := func(format string, args ...any) *gqlerror.Error {
		err := gqlerror.Errorf(format, args...)
		errcode.Set(err, errcode.ValidationFailed)
		return err
	}
	for {
		tok, err := lex.ReadToken()
		if err != nil {
			return nil
		}
		if tok.Kind == lexer.EOF {
			if operations <= 1 && aliases > g.opts.MaxAliases {
				return refuse(ctx, "size", "the operation has %d aliased fields, more than the limit of %d", aliases, g.opts.MaxAliases)
			}
			return nil
		}
		if tokens++; tokens > g.opts.MaxTokens {
			gqlErr := gqlerror.Errorf("exceeded token limit of %d", g.opts.MaxTokens)
			errcode.Set(gqlErr, errcode.ParseFailed)
			return gqlErr
		}
		if tok.Kind == lexer.Comment {
			continue
		}
		// Arguments, variable definitions and their values are inside
		// parentheses, and hold no nodes.
		switch {
		case tok.Kind == lexer.ParenL:
			parens++
		case tok.Kind == lexer.ParenR && parens > 0:
			parens--
		case parens > 0:
		case tok.Kind == lexer.BraceL:
			if len(sets) == 0 {
				if inFragment {
					fragments++
				} else {
					operations++
				}
				inFragment = false
			}
			opened++
			sets = append(sets, opened)
			here = here[:0]
		case tok.Kind == lexer.BraceR && len(sets) > 0:
			sets = sets[:len(sets)-1]
			here = here[:0]
		case tok.Kind == lexer.Name && len(sets) == 0 && prev.Kind != lexer.At:
			if tok.Value == "fragment" && prev.Kind != lexer.Name {
				inFragment = true
			}
		case tok.Kind == lexer.At:
			nodes++
		case tok.Kind == lexer.Name && prev.Kind == lexer.At:
			d := g.schema.Directives[tok.Value]
			if d == nil {
				return invalid(`Unknown directive "@%s".`, record.Clip(tok.Value))
			}
			if !d.IsRepeatable && slices.Contains(here, tok.Value) {
				return invalid(`The directive "@%s" can only be used once at this location.`, tok.Value)
			}
			here = append(here, tok.Value)
		case tok.Kind == lexer.Spread && len(sets) > 0:
			nodes++
			here = here[:0]
		case tok.Kind == lexer.Name && len(sets) > 0 && prev.Kind == lexer.Colon:
			// The field an alias names.
			if prev2.Value != tok.Value {
				aliases++
			}
		case tok.Kind == lexer.Name && len(sets) > 0 && prev.Kind != lexer.Spread &&
			(prev.Kind != lexer.Name || prev.Value != "on" || prev2.Kind != lexer.Spread):
			// A field: its first name is its response name (the alias,
			// when a colon follows).
			nodes++
			here = here[:0]
			if names == nil {
				names = map[nameInSet]int{}
			}
			k := nameInSet{set: sets[len(sets)-1], name: tok.Value}
			names[k]++
			if n := names[k]; n > g.opts.MaxSameName {
				return refuse(ctx, "size", "a selection set holds %d fields named %q, more than the limit of %d", n, record.Clip(k.name), g.opts.MaxSameName)
			}
		}
		if nodes > g.opts.MaxNodes {
			return refuse(ctx, "size", "the document has more fields, fragments and directives than the limit of %d", g.opts.MaxNodes)
		}
		prev2, prev = prev, tok
	}
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
	record.Of(ctx).Refuse(reason, fault.ComplexityLimit, msg)
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
	record.Of(ctx).Refuse("timeout", fault.Timeout, msg)
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
