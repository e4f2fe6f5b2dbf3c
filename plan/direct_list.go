package plan

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/graph/scalar"
	"github.com/flowsnap/flowsnap/jsonwire"
	"github.com/flowsnap/flowsnap/snapshot"
)

// The direct answer of the root fields that read by themselves: a page of
// listRuns, the change feed, a count of runs, the position. Each reads
// what its resolver reads, with the same arguments (decoded by the
// schema's own unmarshalers, RootArgs), in the same root read (roots.go),
// and reads ahead below it as the resolver does; any error gives up, and
// the executor answers with the error the read kept.

// root writes the root field f of the kinds above.
func (w *directWriter) root(f graphql.CollectedField) bool {
	if f.Name == "position" {
		pos, err := w.l.reader.Position(w.ctx)
		return err == nil && w.position(f.Selections, pos)
	}
	if w.l.p.rootArgs == nil {
		return false
	}
	args, err := w.l.p.rootArgs(w.ctx, f.Name, f.ArgumentMap(w.oc.Variables))
	if err != nil {
		return false
	}
	switch f.Name {
	case "listRuns":
		filter, ok1 := args["filter"].(*snapshot.RunFilter)
		order, ok2 := args["order"].(*snapshot.RunOrder)
		first, ok3 := args["first"].(*int)
		after, ok4 := args["after"].(*string)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return false
		}
		page, err := w.l.listRuns(w.ctx, w.oc, f, ListRequest(filter, order, first, after))
		if err != nil {
			return false
		}
		if page == nil {
			w.b = append(w.b, "null"...)
			return true
		}
		return w.connection(f.Selections, page)
	case "changes":
		since, ok1 := args["since"].(int64)
		source, ok2 := args["source"].(*string)
		first, ok3 := args["first"].(*int)
		if !ok1 || !ok2 || !ok3 {
			return false
		}
		feed, err := w.l.changes(w.ctx, w.oc, f, snapshot.ChangesRequest{Since: since, Source: source, First: first})
		if err != nil {
			return false
		}
		if feed == nil {
			w.b = append(w.b, "null"...)
			return true
		}
		return w.changeFeed(f.Selections, feed)
	case "countRuns":
		filter, ok1 := args["filter"].(*snapshot.RunFilter)
		upTo, ok2 := args["upTo"].(*int64)
		if !ok1 || !ok2 {
			return false
		}
		flt, n := CountArgs(filter, upTo)
		c, err := w.l.countRuns(w.ctx, w.oc, f, flt, n)
		// RunCount! is never null.
		return err == nil && c != nil && w.runCount(f.Selections, c)
	}
	return false
}

func (w *directWriter) position(sel ast.SelectionSet, p snapshot.Position) bool {
	fields, ok := w.collect(sel, "Position")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "Position")
		case "source":
			w.b = jsonwire.AppendQuoted(w.b, p.Source)
		case "revision":
			w.b = scalar.AppendSafeInt(w.b, p.Revision)
		default:
			return false
		}
		return true
	})
}

func (w *directWriter) runCount(sel ast.SelectionSet, c *snapshot.RunCount) bool {
	fields, ok := w.collect(sel, "RunCount")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "RunCount")
		case "count":
			w.b = scalar.AppendSafeInt(w.b, c.Count)
		case "capped":
			w.b = appendBool(w.b, c.Capped)
		default:
			return false
		}
		return true
	})
}

func (w *directWriter) changeFeed(sel ast.SelectionSet, feed *snapshot.ChangeFeed) bool {
	fields, ok := w.collect(sel, "ChangeFeed")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "ChangeFeed")
		case "changes":
			w.b = append(w.b, '[')
			for i := range feed.Changes {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				if !w.change(f.Selections, &feed.Changes[i]) {
					return false
				}
			}
			w.b = append(w.b, ']')
		case "nextRevision":
			w.b = scalar.AppendSafeInt(w.b, feed.NextRevision)
		case "hasMore":
			w.b = appendBool(w.b, feed.HasMore)
		default:
			return false
		}
		return true
	})
}

func (w *directWriter) change(sel ast.SelectionSet, c *snapshot.Change) bool {
	fields, ok := w.collect(sel, "Change")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "Change")
		case "runId":
			w.b = jsonwire.AppendQuoted(w.b, c.RunID)
		case "revision":
			w.b = scalar.AppendSafeInt(w.b, c.Revision)
		case "deleted":
			w.b = appendBool(w.b, c.Deleted)
		case "run":
			// The key the read-ahead asked for (changeRunKeys).
			snap, err := w.l.runs.one(w.ctx, c.RunID)
			return err == nil && w.snapshot(f.Selections, snap)
		default:
			return false
		}
		return true
	})
}
