package snapshot

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
)

// Page sizes of related pages (SPEC §2.3).
const (
	DefaultPageSize = 100
	MaxPageSize     = 200
)

// PageRequest asks for one page of a run's children or rounds.
type PageRequest struct {
	// Anchor is the run whose children or rounds are listed; cursors are
	// bound to it.
	Anchor string
	// Lineage is the lineage whose rounds are listed (the anchor's
	// lineageId); unused for children.
	Lineage string
	// First is the page size; nil means DefaultPageSize.
	First *int
	// After is the cursor of the edge to continue after; nil means the start.
	After *string
}

// Page is one page of a related list, read at the read's position.
type Page struct {
	Anchor   string
	Edges    []Edge
	PageInfo PageInfo
}

// PageInfo says whether a page has a successor and where it starts and
// ends, with Relay's field names.
type PageInfo struct {
	HasNextPage bool
	// HasPreviousPage is always false: pages are read forward only (first
	// and after), where Relay's connection spec lets a server answer false
	// rather than read what lies before the cursor.
	HasPreviousPage bool
	// StartCursor is the cursor of the page's first edge; nil for an empty page.
	StartCursor *string
	// EndCursor is the cursor of the page's last edge; nil for an empty page.
	EndCursor *string
}

// Edge is one item of a page: the run, and where it stands in the list.
type Edge struct {
	Cursor  string
	Ordinal int64
	RunID   string
	Node    Result
}

// PageResult is one page of a batch of page reads, or the error that
// request alone failed with (a bad page size or cursor).
type PageResult struct {
	Page *Page
	Err  error
}

// Children reads one page of a run's children, ordered by (seq, child id).
func (r *Reader) Children(ctx context.Context, req PageRequest) (*Page, error) {
	return r.page(ctx, cursor.Children, req)
}

// Rounds reads one page of the rounds of a lineage, ordered by (round
// ordinal, run id).
func (r *Reader) Rounds(ctx context.Context, req PageRequest) (*Page, error) {
	return r.page(ctx, cursor.Rounds, req)
}

func (r *Reader) page(ctx context.Context, kind cursor.Kind, req PageRequest) (*Page, error) {
	res, err := r.Pages(ctx, kind, []PageRequest{req})
	if err != nil {
		return nil, err
	}
	return res[0].Page, res[0].Err
}

// Pages reads a batch of pages of one kind (cursor.Children or
// cursor.Rounds), edges and runs, in one statement whatever the batch's
// size. Results are in request order.
func (r *Reader) Pages(ctx context.Context, kind cursor.Kind, reqs []PageRequest) ([]PageResult, error) {
	if kind != cursor.Children && kind != cursor.Rounds {
		return nil, fmt.Errorf("snapshot: no related pages of kind %q", kind)
	}
	var out []PageResult
	err := r.with(ctx, func(q *querier) error {
		var err error
		out, err = q.pages(kind, reqs)
		return err
	})
	return out, err
}

// pageSize checks a requested page size.
func pageSize(first *int) (int, error) {
	if first == nil {
		return DefaultPageSize, nil
	}
	if *first < 1 || *first > MaxPageSize {
		return 0, fault.Errorf(fault.BadUserInput, "first must be between 1 and %d, got %d", MaxPageSize, *first)
	}
	return *first, nil
}

// keysetQuery is one page's slice of the edges statement: the rows after
// (ordinal, last) in list order, one more than the page size so that
// hasNextPage needs no second look. The row-value comparison and ORDER BY
// follow the index exactly, so a page costs the same at any depth. SQLite
// does not seek an expression index with a row value, only with a plain
// bound: the rounds query repeats the ordinal's lower bound on its own.
var keysetQuery = map[cursor.Kind]string{
	cursor.Children: `SELECT seq AS ord, child_id AS id FROM flows_run_parents
	WHERE parent_id = $%[1]d AND (seq, child_id) > ($%[2]d, $%[3]d)
	ORDER BY seq, child_id LIMIT $%[4]d`,
	cursor.Rounds: `SELECT COALESCE(round_ordinal, 0) AS ord, run_id AS id FROM flows_runs
	WHERE COALESCE(lineage_id, run_id) = $%[1]d AND COALESCE(round_ordinal, 0) >= $%[2]d
	  AND (COALESCE(round_ordinal, 0), run_id) > ($%[2]d, $%[3]d)
	ORDER BY COALESCE(round_ordinal, 0), run_id LIMIT $%[4]d`,
}

type pageWant struct {
	req   int // index in the request batch
	key   string
	after cursor.Cursor
	size  int
}

// pageWants checks each request's page size, anchor and cursor (which must
// belong to kind, the anchor and this store): errs holds each request's
// problem, wants the requests that can be read, keyed by key(req).
func (q *querier) pageWants(kind cursor.Kind, reqs []PageRequest, key func(PageRequest) string) (wants []pageWant, errs []error) {
	errs = make([]error, len(reqs))
	for i, req := range reqs {
		size, err := pageSize(req.First)
		if err == nil {
			err = CheckID(req.Anchor)
		}
		w := pageWant{req: i, key: key(req), size: size, after: cursor.Cursor{Ordinal: -1}}
		if err == nil && req.After != nil {
			w.after, err = cursor.DecodeFor(*req.After, q.pos().Source, req.Anchor, kind)
			if err == nil {
				err = notBefore(w.after, q.pos())
			}
		}
		if err != nil {
			errs[i] = err
			continue
		}
		wants = append(wants, w)
	}
	return wants, errs
}

// keysetUnion is one UNION ALL of keyset per want, each selecting the want's
// index as w and then cols of its slice, and the arguments that bind it.
// keyset takes its placeholders by index: %[1]d the key, %[2]d the ordinal,
// %[3]d the last id (bound only when hasLast) and %[4]d the limit, one more
// than the page size so that hasNextPage needs no second look.
func keysetUnion(keyset, cols string, wants []pageWant, hasLast bool) (string, []any) {
	var sql strings.Builder
	args := make([]any, 0, 4*len(wants))
	for i, w := range wants {
		if i > 0 {
			sql.WriteString("\nUNION ALL\n")
		}
		first := len(args) + 1
		args = append(args, w.key, w.after.Ordinal)
		last := 0
		if hasLast {
			args = append(args, w.after.Last)
			last = len(args)
		}
		args = append(args, w.size+1)
		fmt.Fprintf(&sql, "SELECT %d AS w, %s FROM (", i, strings.ReplaceAll(cols, "p.", fmt.Sprintf("p%d.", i)))
		fmt.Fprintf(&sql, keyset, first, first+1, last, len(args))
		fmt.Fprintf(&sql, ") AS p%d", i)
	}
	return sql.String(), args
}

func (q *querier) pages(kind cursor.Kind, reqs []PageRequest) ([]PageResult, error) {
	out := make([]PageResult, len(reqs))
	wants, errs := q.pageWants(kind, reqs, func(req PageRequest) string {
		if kind == cursor.Rounds {
			return req.Lineage
		}
		return req.Anchor
	})
	for i, req := range reqs {
		if out[i].Err = errs[i]; errs[i] == nil {
			out[i].Page = &Page{Anchor: req.Anchor}
		}
	}
	if len(wants) == 0 {
		return out, nil
	}

	// One statement for every page: the edges of each page's keyset, with
	// their runs joined in, so a page costs one round trip.
	union, args := keysetUnion(keysetQuery[kind], "p.ord, p.id", wants, true)
	// UNION ALL keeps no order of its own; sorting at most 200 pages of 201
	// rows is cheap.
	rows, err := q.query(`SELECT q.w, q.ord, `+runColumns+`
FROM (`+union+`) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id
ORDER BY q.w, q.ord, q.id`, args...)
	if err != nil {
		return nil, persistence(err, "reading "+string(kind))
	}
	defer rows.Close()
	var wi, ord int64
	var raw rawRun
	dest := append([]any{&wi, &ord}, raw.dest()...)
	for rows.Next() {
		raw = rawRun{}
		if err := rows.Scan(dest...); err != nil {
			return nil, persistence(err, "reading "+string(kind))
		}
		if wi < 0 || int(wi) >= len(wants) {
			return nil, fault.Errorf(fault.PersistenceFailed, "the store answered a page nobody asked for")
		}
		w := wants[wi]
		page := out[w.req].Page
		if len(page.Edges) == w.size {
			page.PageInfo.HasNextPage = true
			continue
		}
		snap, err := raw.decode(q.pos())
		c := cursor.Encode(cursor.Cursor{Source: q.pos().Source, Anchor: reqs[w.req].Anchor, Kind: kind, Ordinal: ord, Last: raw.id, Revision: q.pos().Revision})
		page.Edges = append(page.Edges, Edge{Cursor: c, Ordinal: ord, RunID: raw.id, Node: Result{Snapshot: snap, Err: err}})
	}
	if err := rows.Err(); err != nil {
		return nil, persistence(err, "reading "+string(kind))
	}
	for _, w := range wants {
		page := out[w.req].Page
		if n := len(page.Edges); n > 0 {
			page.PageInfo.StartCursor = &page.Edges[0].Cursor
			page.PageInfo.EndCursor = &page.Edges[n-1].Cursor
		}
	}
	return out, nil
}
