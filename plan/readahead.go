package plan

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
)

// batchField is one field that reads, in the table the resolvers and
// readAhead share (see loaders).
type batchField struct {
	// want tells the field's loader the keys of objs (every parent of the
	// field at one level) with the field's arguments, and returns what
	// gives the field's values once the loaders are flushed: what
	// readAhead follows the selection below.
	want func(l *loaders, objs []any, a *args) func(ctx context.Context) []any
}

// field makes the batchField of a field whose parents are of type O, read
// by the loader ld with the keys that keys builds: the same function its
// resolver builds them with.
func field[O any, K comparable, V any](ld func(*loaders) *loader[K, V], keys func(objs []O, a *args) []K) batchField {
	return batchField{want: func(l *loaders, objs []any, a *args) func(ctx context.Context) []any {
		typed := make([]O, 0, len(objs))
		for _, o := range objs {
			if t, ok := o.(O); ok {
				typed = append(typed, t)
			}
		}
		ks := keys(typed, a)
		if a.bad || len(ks) == 0 {
			return func(context.Context) []any { return nil }
		}
		entries := ld(l).want(ks)
		return func(ctx context.Context) []any {
			out := make([]any, 0, len(entries))
			for _, e := range entries {
				// Errors stay in the loader with their keys, for the
				// resolvers to report where they belong.
				if v, err := e.wait(ctx); err == nil {
					out = append(out, v)
				}
			}
			return out
		}
	}}
}

// root is the parent of root fields.
type root struct{}

// batchFields are the fields that read, keyed "Type.field". Every field
// marked batch: true in gqlgen.yml has an entry (a test checks), and so do
// the root fields and the non-batch fields that read.
var batchFields = map[string]batchField{
	"Query.run": field(func(l *loaders) *loader[string, snapshot.Snapshot] { return l.runs },
		func(_ []root, a *args) []string { return []string{a.id("id")} }),
	"Query.node": field(func(l *loaders) *loader[string, snapshot.Snapshot] { return l.runs },
		func(_ []root, a *args) []string { return []string{a.id("id")} }),
	"Query.runs": field(func(l *loaders) *loader[string, snapshot.Snapshot] { return l.runs },
		func(_ []root, a *args) []string {
			keys, err := runsKeys(a.ids("ids"))
			a.bad = a.bad || err != nil
			return keys
		}),
	"Run.parent": field(func(l *loaders) *loader[string, snapshot.Snapshot] { return l.runs },
		func(objs []*snapshot.Run, _ *args) []string { keys, _ := parentKeys(objs); return keys }),
	"Run.children": field(func(l *loaders) *loader[pageKey, *snapshot.Page] { return l.pages },
		func(objs []*snapshot.Run, a *args) []pageKey {
			return childrenKeys(objs, a.int("first"), a.string("after"))
		}),
	"Run.rounds": field(func(l *loaders) *loader[pageKey, *snapshot.Page] { return l.pages },
		func(objs []*snapshot.Run, a *args) []pageKey {
			return roundsKeys(objs, a.int("first"), a.string("after"))
		}),
	"Run.steps": field(func(l *loaders) *loader[pageKey, *snapshot.StepPage] { return l.journal().steps },
		func(objs []*snapshot.Run, a *args) []pageKey {
			return journalPageKeys(objs, a.int("first"), a.string("after"))
		}),
	"Run.inboundEvents": field(func(l *loaders) *loader[pageKey, *snapshot.InboundEventPage] { return l.journal().inbound },
		func(objs []*snapshot.Run, a *args) []pageKey {
			return journalPageKeys(objs, a.int("first"), a.string("after"))
		}),
	"Run.events": field(func(l *loaders) *loader[pageKey, *snapshot.RunEventPage] { return l.journal().runEvents },
		func(objs []*snapshot.Run, a *args) []pageKey {
			return journalPageKeys(objs, a.int("first"), a.string("after"))
		}),
	"Run.currentStep": field(func(l *loaders) *loader[*snapshot.Run, snapshot.Step] { return l.journal().current },
		func(objs []*snapshot.Run, _ *args) []*snapshot.Run { return objs }),
	"RunStep.parentStep":   stepParentField[*snapshot.RunStep](),
	"SleepStep.parentStep": stepParentField[*snapshot.SleepStep](),
	"WaitStep.parentStep":  stepParentField[*snapshot.WaitStep](),
	"Change.run": field(func(l *loaders) *loader[string, snapshot.Snapshot] { return l.runs },
		func(objs []*snapshot.Change, _ *args) []string { return changeRunKeys(objs) }),
	"RunStep.attempts": field(func(l *loaders) *loader[attemptsKey, []snapshot.Result[*snapshot.Attempt]] {
		return l.journal().attempts
	},
		func(objs []*snapshot.RunStep, a *args) []attemptsKey { return attemptsKeys(objs, a.int("last")) }),
}

func stepParentField[S snapshot.Step]() batchField {
	return field(func(l *loaders) *loader[snapshot.StepKey, snapshot.Step] { return l.journal().step },
		func(objs []S, _ *args) []snapshot.StepKey { keys, _ := parentStepKeys(objs); return keys })
}

// throughFields are the fields that read nothing but hold values with
// fields that do: readAhead follows them down.
var throughFields = map[string]func(obj any) []any{
	"RunConnection.edges": func(o any) []any { return each(o.(*snapshot.Page).Edges, func(e snapshot.Edge) any { return e }) },
	"RunConnection.nodes": func(o any) []any {
		return each(o.(*snapshot.Page).Edges, func(e snapshot.Edge) any { return e.Node.Value })
	},
	"RunEdge.node": func(o any) []any { return []any{o.(snapshot.Edge).Node.Value} },
	"ChangeFeed.changes": func(o any) []any {
		feed := o.(*snapshot.ChangeFeed)
		out := make([]any, len(feed.Changes))
		for i := range feed.Changes {
			out[i] = &feed.Changes[i]
		}
		return out
	},
	"StepConnection.edges": func(o any) []any {
		return each(o.(*snapshot.StepPage).Edges, func(e snapshot.StepEdge) any { return e })
	},
	"StepConnection.nodes": func(o any) []any {
		return each(o.(*snapshot.StepPage).Edges, func(e snapshot.StepEdge) any { return e.Step })
	},
	"StepEdge.node": func(o any) []any { return []any{o.(snapshot.StepEdge).Step} },
}

func each[E any](list []E, f func(E) any) []any {
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = f(e)
	}
	return out
}

// typeName is the GraphQL object type of a value readAhead follows; ""
// for one it does not.
func typeName(o any) string {
	switch v := o.(type) {
	case root:
		return "Query"
	case *snapshot.Run:
		if v != nil {
			return "Run"
		}
	case *snapshot.Page:
		if v != nil {
			return "RunConnection"
		}
	case snapshot.Edge:
		return "RunEdge"
	case *snapshot.ChangeFeed:
		if v != nil {
			return "ChangeFeed"
		}
	case *snapshot.Change:
		if v != nil {
			return "Change"
		}
	case *snapshot.StepPage:
		if v != nil {
			return "StepConnection"
		}
	case snapshot.StepEdge:
		return "StepEdge"
	case *snapshot.RunStep:
		if v != nil {
			return "RunStep"
		}
	case *snapshot.SleepStep:
		if v != nil {
			return "SleepStep"
		}
	case *snapshot.WaitStep:
		if v != nil {
			return "WaitStep"
		}
	}
	return ""
}

// readAhead returns the operation's loaders after reading ahead, once per
// operation, what its selection will ask of them: level by level, each
// batched field of a level with one get for all its parents at that level.
func readAhead(ctx context.Context) *loaders {
	l := from(ctx)
	l.ahead.Do(func() {
		oc := graphql.GetOperationContext(ctx)
		if oc == nil || oc.Operation == nil {
			return
		}
		l.walk(ctx, oc, oc.Operation.SelectionSet)
	})
	return l
}

// level is a selection to apply to objs, all of one parent field.
type level struct {
	sel  ast.SelectionSet
	objs []any
}

func (l *loaders) walk(ctx context.Context, oc *graphql.OperationContext, sel ast.SelectionSet) {
	if p, ok := l.oneRead(oc); ok && (len(p.pages) > 0 || p.parents.OfRuns) && ctx.Err() == nil {
		l.readAll(ctx, p)
	}
	l.walkFrom(ctx, oc, level{sel: sel, objs: []any{root{}}}, true)
}

// oneRead is a query whose every read is of runs by id at its root and, on
// those runs, of their parents and of children and rounds pages, below
// which nothing reads but the parents of the pages' runs: what one
// statement reads (snapshot.Reader.RunsPagesAndParents, or
// snapshot.Reader.RunsAndParents without pages).
type oneRead struct {
	ids []string
	// pages are the page fields on the runs: each is read for every id.
	pages []pageField
	// parents says whose parents are selected: the runs' (Run.parent on
	// them), the pages' runs' (on the nodes of a page), or both.
	parents snapshot.Parents
}

// pageKinds are the Run fields that are pages of runs, by name.
var pageKinds = map[string]cursor.Kind{"children": cursor.Children, "rounds": cursor.Rounds}

type pageField struct {
	kind  cursor.Kind
	first *int
	after *string
}

// oneRead returns the operation's plan as one read (planOneRead), made
// once: the direct answer asks for it before the walk does.
func (l *loaders) oneRead(oc *graphql.OperationContext) (oneRead, bool) {
	l.planOnce.Do(func() { l.plan, l.planned = l.planOneRead(oc) })
	return l.plan, l.planned
}

// planOneRead returns the query of oc as one read, when it is one.
func (l *loaders) planOneRead(oc *graphql.OperationContext) (oneRead, bool) {
	var p oneRead
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query {
		return p, false
	}
	reads := false
	for _, f := range collectFields(oc, oc.Operation.SelectionSet, l.p.implementors["Query"]) {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		a := l.argsOf(f, oc)
		switch f.Name {
		case "run", "node":
			p.ids = append(p.ids, a.id("id"))
		case "runs":
			ids, err := runsKeys(a.ids("ids"))
			a.bad = a.bad || err != nil || len(ids) == 0
			p.ids = append(p.ids, ids...)
		default:
			return p, false
		}
		if a.bad || !l.runsReadOnce(oc, f, &p) {
			return p, false
		}
		reads = true
	}
	return p, reads
}

// runsReadOnce adds to p the page fields that f, a root field of runs,
// selects on a Run, and reports whether those are all it reads.
func (l *loaders) runsReadOnce(oc *graphql.OperationContext, f graphql.CollectedField, p *oneRead) bool {
	for _, t := range []string{"Run", "MissingRun"} {
		for _, g := range collectFields(oc, f.Selections, l.p.implementors[t]) {
			if _, batched := batchFields[t+"."+g.Name]; !batched {
				if l.p.mayRead(oc, g) {
					return false
				}
				continue
			}
			if t == "Run" && g.Name == "parent" {
				if l.p.mayRead(oc, g) {
					return false
				}
				p.parents.OfRuns = true
				continue
			}
			a := l.argsOf(g, oc)
			kind := pageKinds[g.Name]
			first, after := a.int("first"), a.string("after")
			if t != "Run" || kind == "" || a.bad {
				return false
			}
			parents, ok := l.p.readsParentsOnly(oc, g)
			if !ok {
				return false
			}
			p.parents.OfPages = p.parents.OfPages || parents
			p.pages = append(p.pages, pageField{kind: kind, first: first, after: after})
		}
	}
	return true
}

// readsParentsOnly reports whether nothing f selects reads but the parent
// of a run (Run.parent, below which nothing reads), at any depth, and
// whether that parent is selected: what the one read of a page's runs
// reads beside them.
func (p *Planner) readsParentsOnly(oc *graphql.OperationContext, f graphql.CollectedField) (parents, ok bool) {
	r := p.parentsOnly(oc, f)
	return r.parents, r.ok
}

// parentsOnlyRead is what readsParentsOnly finds, and whether it is the
// same for every request of the document (no directive on the way decided
// it), in which case the document's shared fields keep it.
type parentsOnlyRead struct{ parents, ok, fixed bool }

func (p *Planner) parentsOnly(oc *graphql.OperationContext, f graphql.CollectedField) parentsOnlyRead {
	if len(f.Selections) == 0 || f.Definition == nil {
		return parentsOnlyRead{ok: true, fixed: true}
	}
	typ := f.Definition.Type.Name()
	def := p.schema.Types[typ]
	if def == nil {
		return parentsOnlyRead{ok: true, fixed: true}
	}
	d, key := sharedKey(oc, f.Selections, typ)
	if d != nil {
		if r, ok := d.parentsOnly.Load(key); ok {
			return r.(parentsOnlyRead)
		}
	}
	r := parentsOnlyRead{ok: true, fixed: true}
types:
	for _, t := range p.schema.GetPossibleTypes(def) {
		fields, fx := collectFixed(oc, f.Selections, p.implementors[t.Name])
		r.fixed = r.fixed && fx
		for _, g := range fields {
			key := t.Name + "." + g.Name
			if _, batched := batchFields[key]; batched {
				reads, fx := false, true
				if key == "Run.parent" {
					reads, fx = p.mayReadFixed(oc, g)
				}
				r.fixed = r.fixed && fx
				if key != "Run.parent" || reads {
					r.parents, r.ok = false, false
					break types
				}
				r.parents = true
				continue
			}
			below := p.parentsOnly(oc, g)
			r.fixed = r.fixed && below.fixed
			if !below.ok {
				r.parents, r.ok = false, false
				break types
			}
			r.parents = r.parents || below.parents
		}
	}
	if d != nil && r.fixed {
		d.parentsOnly.Store(key, r)
	}
	return r
}

// feedReadsRunsOnly reports whether nothing f, a field whose value is a
// change feed, selects reads but the runs of its changes (Change.run) and,
// below those, what readsParentsOnly allows (their parents), and whether
// the parents are selected.
func (p *Planner) feedReadsRunsOnly(oc *graphql.OperationContext, f graphql.CollectedField) (parents, ok bool) {
	for _, g := range collectFields(oc, f.Selections, p.implementors["ChangeFeed"]) {
		if g.Name != "changes" {
			if p.reads(oc, "ChangeFeed", g) {
				return false, false
			}
			continue
		}
		for _, h := range collectFields(oc, g.Selections, p.implementors["Change"]) {
			if h.Name != "run" {
				if p.reads(oc, "Change", h) {
					return false, false
				}
				continue
			}
			below, ok := p.readsParentsOnly(oc, h)
			if !ok {
				return false, false
			}
			parents = parents || below
		}
	}
	return parents, true
}

// reads reports whether f, a field of typ, reads or anything it selects
// may.
func (p *Planner) reads(oc *graphql.OperationContext, typ string, f graphql.CollectedField) bool {
	_, batched := batchFields[typ+"."+f.Name]
	return batched || p.mayRead(oc, f)
}

// readAll reads p in one statement, the query's last, and keeps what it
// read in the loaders, keyed as the walk and the resolvers will ask for
// it: each run by its id (the parents too), and each page by its anchor
// and, for rounds, the lineage of the run read.
func (l *loaders) readAll(ctx context.Context, p oneRead) {
	if l.read != nil {
		l.read.EndWithNext()
	}
	if len(p.pages) == 0 {
		// Runs and their parents, which the run cache may answer.
		runs, parents, err := l.reader.RunsAndParents(ctx, p.ids)
		l.primeRuns(p.ids, runs, parents, err)
		return
	}
	var reqs []snapshot.RunPageRequest
	for _, id := range p.ids {
		for _, pf := range p.pages {
			k := newPageKey(id, "", pf.first, pf.after)
			reqs = append(reqs, snapshot.RunPageRequest{Kind: pf.kind, PageRequest: k.request()})
		}
	}
	runs, pages, parents, err := l.reader.RunsPagesAndParents(ctx, p.ids, reqs, p.parents)
	// Every run fails with the read, where it is asked for.
	l.primeRuns(p.ids, runs, parents, err)
	for i, id := range p.ids {
		if err != nil {
			continue
		}
		run, ok := runs[i].Value.(*snapshot.Run)
		if !ok || run == nil {
			continue
		}
		for j, pf := range p.pages {
			k := newPageKey(id, "", pf.first, pf.after)
			if k.kind = pf.kind; pf.kind == cursor.Rounds {
				k.lineage = run.LineageID
			}
			res := pages[i*len(p.pages)+j]
			if page := res.Value; page != nil {
				for _, e := range page.Edges {
					l.runs.prime(e.RunID, e.Node.Value, e.Node.Err)
				}
			}
			l.pages.prime(k, res.Value, res.Err)
		}
	}
}

// primeRuns keeps in the runs loader the runs of ids and their parents
// that one read returned, or its error for each of ids.
func (l *loaders) primeRuns(ids []string, runs []snapshot.Result[snapshot.Snapshot], parents map[string]snapshot.Result[snapshot.Snapshot], err error) {
	for id, res := range parents {
		l.runs.prime(id, res.Value, res.Err)
	}
	l.runs.primeMany(len(ids), func(i int) (string, snapshot.Snapshot, error) {
		if err != nil {
			return ids[i], nil, err
		}
		return ids[i], runs[i].Value, runs[i].Err
	})
}

// walkFrom reads ahead level by level from start. A walk of a whole query
// (whole) whose every read it makes itself ends the query's read with the
// statement of the last level that reads (snapshot.Read.EndWithNext), when
// the levels below that one cannot read: on PostgreSQL the transaction's
// end then goes with that statement, a round trip less.
func (l *loaders) walkFrom(ctx context.Context, oc *graphql.OperationContext, start level, whole bool) {
	todo := []level{start}
	// complete says every read of the operation so far is one the walk
	// makes: no root field that reads outside the loaders, no argument the
	// walk could not evaluate.
	complete := whole && l.read != nil && oc.Operation != nil && oc.Operation.Operation == ast.Query
	for len(todo) > 0 && ctx.Err() == nil {
		// First every field of the level says what it wants, then each
		// loader reads all of that at once, then the level below is made
		// of what was read.
		var wanted []func(ctx context.Context) level
		below := false
		for _, lv := range todo {
			for _, g := range byType(lv.objs) {
				objs := g.objs
				for _, wf := range l.p.walkSet(oc, lv.sel, g.name) {
					f := wf.f
					switch {
					case wf.want != nil:
						a := l.argsOf(f, oc)
						values := wf.want(l, objs, a)
						complete = complete && !a.bad
						below = below || wf.reads
						wanted = append(wanted, func(ctx context.Context) level { return level{sel: f.Selections, objs: values(ctx)} })
					case wf.through != nil:
						var next []any
						for _, o := range objs {
							next = append(next, wf.through(o)...)
						}
						wanted = append(wanted, func(context.Context) level { return level{sel: f.Selections, objs: next} })
						below = below || wf.reads
					default:
						complete = false
					}
				}
			}
		}
		var last func()
		if complete && !below {
			last = l.read.EndWithNext
		}
		l.flush(ctx, last)
		todo = todo[:0:0]
		for _, w := range wanted {
			todo = append(todo, w(ctx))
		}
	}
}

// walkField is a field the read-ahead walk acts on: one it follows (a
// batched field, whose loader it tells its keys, or one it passes
// through), or one that keeps the walk from being complete (a root field
// that reads by itself, or a field it does not follow with reads below
// it). reads says whether anything below the field may read (mayRead).
type walkField struct {
	f       graphql.CollectedField
	want    func(l *loaders, objs []any, a *args) func(ctx context.Context) []any
	through func(obj any) []any
	reads   bool
}

// walkSet returns the fields of sel on the type name that the walk acts
// on, in the order they are collected; the fields it passes over (those
// that read nothing, most of a run's) are left out. A set no variable
// decides, nor what reads below its fields, is found once per document.
func (p *Planner) walkSet(oc *graphql.OperationContext, sel ast.SelectionSet, name string) []walkField {
	fields, d, key := collectShared(oc, sel, p.implementors[name])
	if d != nil {
		if set, ok := d.walks.Load(key); ok {
			return set.([]walkField)
		}
	}
	fixed := d != nil
	var set []walkField
	for _, f := range fields {
		reads, fx := p.mayReadFixed(oc, f)
		fixed = fixed && fx
		field := name + "." + f.Name
		if bf, ok := batchFields[field]; ok {
			set = append(set, walkField{f: f, want: bf.want, reads: reads})
		} else if through, ok := throughFields[field]; ok {
			set = append(set, walkField{f: f, through: through, reads: reads})
		} else if name == "Query" && !strings.HasPrefix(f.Name, "__") || reads {
			set = append(set, walkField{f: f, reads: reads})
		}
	}
	if fixed {
		d.walks.Store(key, set)
	}
	return set
}

// mayRead reports whether anything f selects may read: a batched field
// at any depth below it, on any type its values may have.
func (p *Planner) mayRead(oc *graphql.OperationContext, f graphql.CollectedField) bool {
	reads, _ := p.mayReadFixed(oc, f)
	return reads
}

// mayReadFixed is mayRead, and says whether the answer is the same for
// every request of the document (no directive on the way decided it), in
// which case the document's shared fields keep it.
func (p *Planner) mayReadFixed(oc *graphql.OperationContext, f graphql.CollectedField) (reads, fixed bool) {
	if len(f.Selections) == 0 || f.Definition == nil {
		return false, true
	}
	typ := f.Definition.Type.Name()
	d, key := sharedKey(oc, f.Selections, typ)
	if d != nil {
		if reads, ok := d.reads.Load(key); ok {
			return reads.(bool), true
		}
	}
	fixed = true
	if def := p.schema.Types[typ]; def != nil {
	types:
		for _, t := range p.schema.GetPossibleTypes(def) {
			fields, fx := collectFixed(oc, f.Selections, p.implementors[t.Name])
			fixed = fixed && fx
			for _, g := range fields {
				_, batched := batchFields[t.Name+"."+g.Name]
				if !batched {
					r, fg := p.mayReadFixed(oc, g)
					fixed, batched = fixed && fg, r
				}
				if batched {
					// A read on a way no variable decides is one for
					// every request.
					reads = true
					break types
				}
			}
		}
	}
	if d != nil && fixed {
		d.reads.Store(key, reads)
	}
	return reads, fixed
}

// typeGroup is the objects of a level of one GraphQL type.
type typeGroup struct {
	name string
	objs []any
}

// byType groups objs by their type, in the order the types first appear,
// leaving out those readAhead does not follow: fragments on one type
// select fields of that type only, so each type collects its own fields.
func byType(objs []any) []typeGroup {
	// Most levels hold objects of one type, which need no grouping.
	name := ""
	for _, o := range objs {
		n := typeName(o)
		if n == "" || name != "" && n != name {
			name = ""
			break
		}
		name = n
	}
	if name != "" {
		return []typeGroup{{name: name, objs: objs}}
	}
	var groups []typeGroup
	at := map[string]int{}
	for _, o := range objs {
		n := typeName(o)
		if n == "" {
			continue
		}
		i, seen := at[n]
		if !seen {
			i = len(groups)
			at[n] = i
			groups = append(groups, typeGroup{name: n})
		}
		groups[i].objs = append(groups[i].objs, o)
	}
	return groups
}

// args are a field's arguments as its resolver gets them: the query's
// literals and variables, defaults applied. bad says one could not be
// evaluated as its getter wants, which the resolver will report; readAhead
// then reads nothing for the field.
type args struct {
	m   map[string]any
	bad bool
}

// argsOf returns f's arguments, evaluated once per operation: the plan of
// one read, the walk and the direct answer each ask for them.
func (l *loaders) argsOf(f graphql.CollectedField, oc *graphql.OperationContext) *args {
	l.argsMu.Lock()
	defer l.argsMu.Unlock()
	if a, ok := l.args[f.Field]; ok {
		return a
	}
	a := evalArgs(f, oc.Variables)
	if l.args == nil {
		l.args = map[*ast.Field]*args{}
	}
	l.args[f.Field] = a
	return a
}

// evalArgs evaluates f's arguments. The operation was validated, so the
// values have the schema's types; one that does not is merely bad.
func evalArgs(f graphql.CollectedField, vars map[string]any) *args {
	a := &args{m: map[string]any{}}
	if f.Definition == nil {
		a.bad = true
		return a
	}
	for _, def := range f.Definition.Arguments {
		v := def.DefaultValue
		if arg := f.Arguments.ForName(def.Name); arg != nil {
			v = arg.Value
		}
		if v == nil {
			continue
		}
		val, ok := value(v, vars)
		if !ok {
			a.bad = true
			continue
		}
		a.m[def.Name] = val
	}
	return a
}

// value evaluates a literal or variable of the kinds the schema's
// arguments use.
func value(v *ast.Value, vars map[string]any) (any, bool) {
	switch v.Kind {
	case ast.Variable:
		return vars[v.Raw], true
	case ast.NullValue:
		return nil, true
	case ast.IntValue:
		return json.Number(v.Raw), true
	case ast.StringValue, ast.BlockValue:
		return v.Raw, true
	case ast.ListValue:
		list := make([]any, len(v.Children))
		for i, c := range v.Children {
			e, ok := value(c.Value, vars)
			if !ok {
				return nil, false
			}
			list[i] = e
		}
		return list, true
	}
	return nil, false
}

// int and string convert as the generated argument parsers do, with
// gqlgen's own unmarshallers, so that readAhead's keys are the resolvers'.
func (a *args) int(name string) *int {
	v, present := a.m[name]
	if !present || v == nil {
		return nil
	}
	n, err := graphql.UnmarshalInt(v)
	a.bad = a.bad || err != nil
	return &n
}

func (a *args) string(name string) *string {
	v, present := a.m[name]
	if !present || v == nil {
		return nil
	}
	s, err := graphql.UnmarshalString(v)
	a.bad = a.bad || err != nil
	return &s
}

func (a *args) id(name string) string {
	s, err := graphql.UnmarshalID(a.m[name])
	a.bad = a.bad || err != nil
	return s
}

func (a *args) ids(name string) []string {
	list, ok := a.m[name].([]any)
	if !ok {
		a.bad = true
		return nil
	}
	out := make([]string, len(list))
	for i, v := range list {
		var err error
		out[i], err = graphql.UnmarshalID(v)
		a.bad = a.bad || err != nil
	}
	return out
}

// The key builders: what a field's resolver and readAhead both ask its
// loader for.

// runsKeys are the keys of Query.runs: its ids, at most snapshot.MaxBatch.
func runsKeys(ids []string) ([]string, error) {
	if len(ids) > snapshot.MaxBatch {
		return nil, fault.Errorf(fault.BadUserInput, "a batch takes at most %d ids, got %d", snapshot.MaxBatch, len(ids))
	}
	return ids, nil
}

// parentKeys are the keys of Run.parent: one per run with an effective
// parent, and at, the index of each among objs.
func parentKeys(objs []*snapshot.Run) (keys []string, at []int) {
	return keysWhere(objs, func(run *snapshot.Run) (string, bool) {
		if run.ExecutionParentID == nil {
			return "", false
		}
		return *run.ExecutionParentID, true
	})
}

// keysWhere are the keys of the objects key gives one for, and at, the
// index of each among objs.
func keysWhere[O, K any](objs []O, key func(O) (K, bool)) (keys []K, at []int) {
	for i, o := range objs {
		if k, ok := key(o); ok {
			keys = append(keys, k)
			at = append(at, i)
		}
	}
	return keys, at
}

func childrenKeys(objs []*snapshot.Run, first *int, after *string) []pageKey {
	return runPageKeys(objs, cursor.Children, func(*snapshot.Run) string { return "" }, first, after)
}

func roundsKeys(objs []*snapshot.Run, first *int, after *string) []pageKey {
	return runPageKeys(objs, cursor.Rounds, func(run *snapshot.Run) string { return run.LineageID }, first, after)
}

// runPageKeys are the keys of a page of kind anchored at each run, within
// the lineage lineage gives.
func runPageKeys(runs []*snapshot.Run, kind cursor.Kind, lineage func(*snapshot.Run) string, first *int, after *string) []pageKey {
	keys := make([]pageKey, len(runs))
	for i, run := range runs {
		keys[i] = newPageKey(run.ID, lineage(run), first, after)
		keys[i].kind = kind
	}
	return keys
}

func attemptsKeys(objs []*snapshot.RunStep, last *int) []attemptsKey {
	keys := make([]attemptsKey, len(objs))
	for i, s := range objs {
		keys[i] = newAttemptsKey(s.Key(), last)
	}
	return keys
}
