package plan

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/snapshot"
)

// The root fields that read by themselves, outside the loaders: a page of
// listRuns, a batch of changes, a count. Each is read once per operation
// and field, whoever asks first (the direct answer or the field's
// resolver), and kept with its error: a direct answer that gives up after
// reading one leaves the executor that answer, not a second read of it (in
// PostgreSQL a failed read aborts the transaction a second would run in).
// What its selection reads below it is then read ahead level by level, as
// the read-ahead does from the root.

// RootArgs decodes the arguments of a root field of Query as gqlgen's
// executor does, with the unmarshalers generated for the schema: the values
// its resolver is given, by argument name, or the error the executor
// reports. raw is the field's argument map (ast.Field.ArgumentMap of the
// operation's variables), defaults applied.
type RootArgs func(ctx context.Context, field string, raw map[string]any) (map[string]any, error)

// WithRootArgs gives the planner the decoder of root fields' arguments,
// which the package of the schema's generated code holds; without it the
// direct answer leaves root fields with arguments of input types
// (listRuns, changes, countRuns) to the executor. It returns p.
func (p *Planner) WithRootArgs(decode RootArgs) *Planner {
	p.rootArgs = decode
	return p
}

// rootReads are an operation's reads of root fields, by field.
type rootReads struct {
	mu sync.Mutex
	m  map[*ast.Field]*rootRead
}

// rootRead is the read of one root field: its value and error once done.
type rootRead struct {
	once sync.Once
	v    any
	err  error
}

// root returns the read of the root field f, made by read the first time
// it is asked for; its selection below is then read ahead.
func (l *loaders) root(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField, read func() (any, error)) (any, error) {
	l.roots.mu.Lock()
	r := l.roots.m[f.Field]
	if r == nil {
		r = &rootRead{}
		if l.roots.m == nil {
			l.roots.m = map[*ast.Field]*rootRead{}
		}
		l.roots.m[f.Field] = r
	}
	l.roots.mu.Unlock()
	r.once.Do(func() {
		r.v, r.err = read()
		if r.err == nil {
			l.readBelow(ctx, oc, f, r.v)
		}
	})
	return r.v, r.err
}

// rootOf returns the operation's loaders and the root field being resolved
// in ctx; ok is false outside an operation that has loaders, where the
// resolver reads by itself.
func rootOf(ctx context.Context) (l *loaders, oc *graphql.OperationContext, f graphql.CollectedField, ok bool) {
	l, oc = from(ctx), graphql.GetOperationContext(ctx)
	fc := graphql.GetFieldContext(ctx)
	if l == nil || oc == nil || fc == nil || fc.Field.Field == nil {
		return nil, nil, f, false
	}
	return l, oc, fc.Field, true
}

// ListRequest is the request of listRuns with its arguments as the resolver
// gets them.
func ListRequest(filter *snapshot.RunFilter, order *snapshot.RunOrder, first *int, after *string) snapshot.ListRequest {
	req := snapshot.ListRequest{First: first, After: after}
	if filter != nil {
		req.Filter = *filter
	}
	if order != nil {
		req.Order = *order
	}
	if after != nil && *after == "" {
		req.After = nil // docs/contract.md#client-conventions: an empty cursor is no cursor
	}
	return req
}

// ListRuns is Query.listRuns: the page req asks for, read through reader,
// and what the field's selection reads below it.
func ListRuns(ctx context.Context, reader *snapshot.Reader, req snapshot.ListRequest) (*snapshot.Page, error) {
	l, oc, f, ok := rootOf(ctx)
	if !ok {
		return reader.ListRuns(ctx, req)
	}
	return l.listRuns(ctx, oc, f, req)
}

func (l *loaders) listRuns(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField, req snapshot.ListRequest) (*snapshot.Page, error) {
	v, err := l.root(ctx, oc, f, func() (any, error) { return l.reader.ListRuns(ctx, req) })
	page, _ := v.(*snapshot.Page)
	return page, err
}

// Changes is Query.changes: the batch req asks for, read through reader,
// and what the field's selection reads below it.
func Changes(ctx context.Context, reader *snapshot.Reader, req snapshot.ChangesRequest) (*snapshot.ChangeFeed, error) {
	l, oc, f, ok := rootOf(ctx)
	if !ok {
		return reader.Changes(ctx, req)
	}
	return l.changes(ctx, oc, f, req)
}

func (l *loaders) changes(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField, req snapshot.ChangesRequest) (*snapshot.ChangeFeed, error) {
	v, err := l.root(ctx, oc, f, func() (any, error) { return l.reader.Changes(ctx, req) })
	feed, _ := v.(*snapshot.ChangeFeed)
	return feed, err
}

// CountArgs are countRuns' arguments with their defaults: no filter, and
// snapshot.DefaultCountUpTo.
func CountArgs(filter *snapshot.RunFilter, upTo *int64) (snapshot.RunFilter, int64) {
	var f snapshot.RunFilter
	if filter != nil {
		f = *filter
	}
	n := int64(snapshot.DefaultCountUpTo)
	if upTo != nil {
		n = *upTo
	}
	return f, n
}

// CountRuns is Query.countRuns: how many runs filter selects, up to upTo,
// read through reader.
func CountRuns(ctx context.Context, reader *snapshot.Reader, filter snapshot.RunFilter, upTo int64) (*snapshot.RunCount, error) {
	l, oc, f, ok := rootOf(ctx)
	if !ok {
		c, err := reader.CountRuns(ctx, filter, upTo)
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
	return l.countRuns(ctx, oc, f, filter, upTo)
}

func (l *loaders) countRuns(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField, filter snapshot.RunFilter, upTo int64) (*snapshot.RunCount, error) {
	v, err := l.root(ctx, oc, f, func() (any, error) {
		c, err := l.reader.CountRuns(ctx, filter, upTo)
		if err != nil {
			return nil, err
		}
		return &c, nil
	})
	c, _ := v.(*snapshot.RunCount)
	return c, err
}
