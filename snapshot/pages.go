package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// Page sizes of related pages (docs/contract.md#snapshots).
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
	// lineageId); unused for children. A rounds request without one lists
	// the anchor's lineage, read in the same statement.
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
	Node    Result[Snapshot]
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
	return res[0].Get()
}

// Pages reads a batch of pages of one kind (cursor.Children or
// cursor.Rounds), edges and runs, in one statement whatever the batch's
// size. Results are in request order; a bad page size or cursor fails only
// its request, a broken row only its edge.
func (r *Reader) Pages(ctx context.Context, kind cursor.Kind, reqs []PageRequest) ([]Result[*Page], error) {
	l, ok := runLists[kind]
	if !ok {
		return nil, fmt.Errorf("snapshot: no related pages of kind %q", kind)
	}
	return r.runPages(ctx, only(l), reqs, nil, "", Parents{})
}

// RunPageRequest asks for one page of a run's children (Kind
// cursor.Children) or of its lineage's rounds (cursor.Rounds).
type RunPageRequest struct {
	Kind cursor.Kind
	PageRequest
}

// RunPages reads a batch of pages of children and rounds together, as
// Pages reads those of one kind: in one statement, so that a run's
// children and its rounds, as a dashboard asks for them, cost one.
func (r *Reader) RunPages(ctx context.Context, reqs []RunPageRequest) ([]Result[*Page], error) {
	_, pages, err := r.RunsAndPages(ctx, nil, reqs)
	return pages, err
}

// RunsAndPages reads the snapshots of ids, as Load does, and a batch of
// pages of children and rounds, as RunPages does, in one statement: a
// dashboard's run and its run's pages cost one statement and one round
// trip, a rounds page without a lineage listing its anchor's.
func (r *Reader) RunsAndPages(ctx context.Context, ids []string, reqs []RunPageRequest) ([]Result[Snapshot], []Result[*Page], error) {
	runs, pages, _, err := r.RunsPagesAndParents(ctx, ids, reqs, Parents{})
	return runs, pages, err
}

// Parents says whose parents (execution_parent_id, what Run.parent reads)
// a read of runs and pages reads beside them (see RunsPagesAndParents).
type Parents struct {
	// OfRuns asks for the parents of the runs by id, OfPages for those of
	// the runs on the pages.
	OfRuns, OfPages bool
}

// of is the condition on the rows of the union u whose runs' parents are
// read; "" for none.
func (p Parents) of() string {
	switch {
	case p.OfRuns && p.OfPages:
		return "u.w >= -1"
	case p.OfRuns:
		return "u.w = -1"
	case p.OfPages:
		return "u.w >= 0"
	}
	return ""
}

// RunsPagesAndParents is RunsAndPages reading, in the same read, the
// parents of the runs which names: those of a few runs in the same
// statement (a dashboard's run and its pages of ten, with every run's
// parent, cost the one statement of the run and its pages), and those of
// more runs, which mostly name one another, in a second statement of the
// parents their rows name and nobody read, only when there are any (the
// read then opens a transaction, see Read.Alone).
// parents holds, by id, every such parent that is not itself a run by id
// or on a page.
func (r *Reader) RunsPagesAndParents(ctx context.Context, ids []string, reqs []RunPageRequest, which Parents) (runs []Result[Snapshot], pages []Result[*Page], parents map[string]Result[Snapshot], err error) {
	lists := make([]pageList, len(reqs))
	plain := make([]PageRequest, len(reqs))
	for i, req := range reqs {
		l, ok := runLists[req.Kind]
		if !ok {
			return nil, nil, nil, fmt.Errorf("snapshot: no related pages of kind %q", req.Kind)
		}
		if req.Kind == cursor.Rounds && req.Lineage == "" {
			l = roundsOfAnchor
		}
		lists[i], plain[i] = l, req.PageRequest
	}
	var byID *idRuns
	if len(ids) > 0 || which.of() != "" {
		byID = newIDRuns(ids, scopeOf(ctx))
		if which.of() != "" {
			byID.parents = map[string]Result[Snapshot]{}
		}
	}
	// The statement looks up the parents of a few runs; those of more are
	// read after it, as their rows name them.
	rows := 0
	for _, req := range plain {
		n, _ := pageSize(req.First)
		rows += n
	}
	inStatement := Parents{OfRuns: which.OfRuns && len(ids) <= maxParentLookups}
	inStatement.OfPages = which.OfPages && (!which.OfRuns || inStatement.OfRuns) && len(ids)+rows <= maxParentLookups
	after := Parents{OfRuns: which.OfRuns && !inStatement.OfRuns, OfPages: which.OfPages && !inStatement.OfPages}
	pages, err = r.runPages(ctx, func(i int) pageList { return lists[i] }, plain, byID, inStatement.of(), after)
	if err != nil || byID == nil {
		return nil, pages, nil, err
	}
	if byID.placed != len(byID.distinct) {
		return nil, nil, nil, errFewerRuns
	}
	if len(ids) > 0 {
		runs, err = byID.results()
	}
	return runs, pages, byID.parents, err
}

// runPages reads pages of run lists, reqs[i] of list(i), edges and runs,
// and the runs of ids, when set, in the same statement, with the parents
// of the runs of the union's rows that parentsOf names (Parents.of), which
// it places in ids; and then, in a second statement of the same read, the
// parents of the runs after names that nobody read (parentsNamed).
func (r *Reader) runPages(ctx context.Context, list func(i int) pageList, reqs []PageRequest, ids *idRuns, parentsOf string, after Parents) ([]Result[*Page], error) {
	var raw rawRun
	var byID *pageIDs
	scope := scopeOf(ctx)
	// edges are the edges read, whose runs' parents after may want.
	var edges []Edge
	if ids != nil && (len(ids.distinct) > 0 || parentsOf != "" || after.of() != "") {
		byID = &pageIDs{ids: ids.distinct, parentsOf: parentsOf, row: func(pos Position) error {
			_, err := ids.place(&raw, pos)
			return err
		}}
		if after.of() != "" {
			byID.then = func(q *querier) error {
				var runs []Result[Snapshot]
				if after.OfRuns {
					runs = ids.out
				}
				if !after.OfPages {
					edges = nil
				}
				return q.parentsNamed(ids, runs, edges)
			}
		}
	}
	return readPages(ctx, r, list, reqs, raw.dest(),
		func(pos Position, c string, ord int64, id string) Edge {
			// The keyset's id is the run's.
			raw.id = id
			snap, err := raw.decode(pos)
			snap, err = show(scope, snap, err)
			e := Edge{Cursor: c, Ordinal: ord, RunID: raw.id, Node: Result[Snapshot]{Value: snap, Err: err}}
			if byID != nil && byID.then != nil {
				edges = append(edges, e)
			}
			return e
		},
		func(req PageRequest, edges []Edge, info PageInfo) *Page {
			return &Page{Anchor: req.Anchor, Edges: edges, PageInfo: info}
		}, byID)
}

// pageIDs are runs by id that a batch of run pages (whose statement is
// runPages) reads beside its pages: rows of page index -1, before every
// page's, whose id is one of ids, each scanned into the batch's
// destinations and handed to row; and, when parentsOf is set, rows of
// index -2, the parents of the runs of the rows parentsOf names (see
// Parents.of), handed to row too.
type pageIDs struct {
	ids       []string
	parentsOf string
	row       func(pos Position) error
	// then, when set, runs in the same read after the statement; the
	// read may then need two statements (see querier.mayReadAgain).
	then func(q *querier) error
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

// pageList is one kind of paged list: children, rounds, or a journal list.
// A batch of its pages is read in one statement: one keyset slice per
// page, joined by UNION ALL (see keysetUnion), and wrapped by statement.
// Lists with the same cols and statement (children and rounds) can share
// a batch.
type pageList struct {
	kind cursor.Kind
	// keyset is one page's slice: its first two columns are the row's
	// ordinal and tie-breaking id (what its cursor holds). Its placeholders
	// are %[1]s the key, %[2]s the ordinal after which the page starts,
	// %[3]s the id after which it starts (for lists whose ordinals repeat,
	// hasLast), each a store.Dialect.Bound, and $%[4]d the limit: one more
	// than the page size, so that hasNextPage needs no second look. The row-value comparison and ORDER
	// BY follow an index exactly, so a page costs the same at any depth.
	keyset  string
	hasLast bool
	// cols are the columns of a slice that the union keeps, "p." naming the
	// slice.
	cols string
	// statement wraps the union into the statement that runs; its first
	// three columns must be the page's index w, the ordinal and the id,
	// the rest what the list's scan reads, in page, ordinal, id order.
	statement func(union string) string
	// key is what a request's slice is keyed by; nil means its anchor.
	key func(PageRequest) string
	// name tells a list's statements from another's of the same kind;
	// empty means its kind.
	name string
}

// shape is what a list's slice of a statement is known by (see
// pageStatements).
func (l pageList) shape() string {
	if l.name != "" {
		return l.name
	}
	return string(l.kind)
}

// runPages wraps the edges of children or rounds with their runs, so a
// page costs one round trip. UNION ALL keeps no order of its own; sorting
// at most 500 pages of 201 rows is cheap.
func runPages(union string) string {
	return `SELECT q.w, q.ord, q.id, ` + runColumns + `
FROM (` + union + `) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id
ORDER BY q.w, q.ord, q.id`
}

// runPagesAndParents is runPages reading, as rows of index -2, the parents
// of the runs of the union's rows that of names, each once, leaving out
// those among the union's own runs.
func runPagesAndParents(of string) func(union string) string {
	return func(union string) string {
		return `WITH u AS (` + union + `)
SELECT q.w, q.ord, q.id, ` + runColumns + `
FROM (SELECT u.w, u.ord, u.id FROM u
	UNION ALL
	SELECT -2, 0, pu.id FROM (` + parentsOf("u", of) + `) AS pu) AS q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id
ORDER BY q.w, q.ord, q.id`
	}
}

// runLists are the related lists of runs (docs/contract.md#snapshots). SQLite does not seek
// an expression index with a row value, only with a plain bound: the rounds
// query repeats the ordinal's lower bound on its own.
var runLists = map[cursor.Kind]pageList{
	cursor.Children: {kind: cursor.Children, hasLast: true, cols: "p.ord, p.id", statement: runPages,
		keyset: `SELECT seq AS ord, child_id AS id FROM flows_run_parents
	WHERE parent_id = %[1]s AND (seq, child_id) > (%[2]s, %[3]s)
	ORDER BY seq, child_id LIMIT $%[4]d`},
	cursor.Rounds: {kind: cursor.Rounds, hasLast: true, cols: "p.ord, p.id", statement: runPages,
		key: func(req PageRequest) string { return req.Lineage },
		keyset: `SELECT COALESCE(round_ordinal, 0) AS ord, run_id AS id FROM flows_runs
	WHERE COALESCE(lineage_id, run_id) = %[1]s AND COALESCE(round_ordinal, 0) >= %[2]s
	  AND (COALESCE(round_ordinal, 0), run_id) > (%[2]s, %[3]s)
	ORDER BY COALESCE(round_ordinal, 0), run_id LIMIT $%[4]d`},
}

// roundsOfAnchor lists the rounds of a request without a lineage: its
// anchor's, read from the anchor's row in the same statement, so that a
// run and its rounds need not be read one after the other. An anchor
// without a row has no rounds.
var roundsOfAnchor = pageList{kind: cursor.Rounds, name: "rounds-of-anchor", hasLast: true, cols: "p.ord, p.id", statement: runPages,
	keyset: `SELECT COALESCE(round_ordinal, 0) AS ord, run_id AS id FROM flows_runs
	WHERE COALESCE(lineage_id, run_id) = (SELECT COALESCE(a.lineage_id, a.run_id) FROM flows_runs a WHERE a.run_id = %[1]s)
	  AND COALESCE(round_ordinal, 0) >= %[2]s
	  AND (COALESCE(round_ordinal, 0), run_id) > (%[2]s, %[3]s)
	ORDER BY COALESCE(round_ordinal, 0), run_id LIMIT $%[4]d`}

type pageWant struct {
	req   int      // index in the request batch
	l     pageList // the list the page is of
	key   string
	after cursor.Cursor
	size  int
	// unplaced says after was decoded before the read had a position, and
	// is checked against it once the statement has given one.
	unplaced bool
}

// pageWants checks each request's page size, anchor and cursor (which must
// belong to the request's list, list(i), the anchor and this store): errs
// holds each request's problem, wants the requests that can be read, keyed
// by their list's key.
func (q *querier) pageWants(reqs []PageRequest, list func(i int) pageList) (wants []pageWant, errs []error) {
	errs = make([]error, len(reqs))
	for i, req := range reqs {
		l := list(i)
		size, err := pageSize(req.First)
		if err == nil {
			err = vocab.CheckID("an id", req.Anchor)
		}
		key := req.Anchor
		if l.key != nil {
			key = l.key(req)
		}
		w := pageWant{req: i, l: l, key: key, size: size, after: cursor.Cursor{Ordinal: -1}}
		if err == nil && req.After != nil {
			// A read run alone has its position only once its statement
			// has run: the cursor's store is checked then (afterCheck).
			source := q.pos().Source
			w.unplaced = !q.placed()
			w.after, err = cursor.Decode(*req.After)
			if w.unplaced && err == nil {
				source = w.after.Source
			}
			if err == nil {
				err = w.after.Check(source, req.Anchor, l.kind)
			}
			if err == nil && !w.unplaced {
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

// afterCheck checks the cursor of a want decoded before the read had a
// position (unplaced) against the store and the position, as pageWants
// checks those decoded after.
func afterCheck(w pageWant, req PageRequest, pos Position) error {
	if !w.unplaced {
		return nil
	}
	if err := w.after.Check(pos.Source, req.Anchor, w.l.kind); err != nil {
		return err
	}
	return notBefore(w.after, pos)
}

// keysetUnion is one UNION ALL of its list's keyset per want, each
// selecting the want's index as w and then the list's cols of its slice,
// bound by keysetArgs.
func keysetUnion(d store.Dialect, wants []pageWant) string {
	var sql strings.Builder
	n := 0
	for i, w := range wants {
		if i > 0 {
			sql.WriteString("\nUNION ALL\n")
		}
		first := n + 1
		n += 2
		last := 0
		if w.l.hasLast {
			n++
			last = n
		}
		n++
		fmt.Fprintf(&sql, "SELECT %d AS w, %s FROM (", i, strings.ReplaceAll(w.l.cols, "p.", fmt.Sprintf("p%d.", i)))
		fmt.Fprintf(&sql, w.l.keyset, d.Bound(first), d.Bound(first+1), d.Bound(last), n)
		fmt.Fprintf(&sql, ") AS p%d", i)
	}
	return sql.String()
}

// keysetArgs are the arguments that bind keysetUnion(d, wants), in its
// placeholders' order.
func keysetArgs(wants []pageWant) []any {
	args := make([]any, 0, 4*len(wants))
	for _, w := range wants {
		args = append(args, w.key, w.after.Ordinal)
		if w.l.hasLast {
			args = append(args, w.after.Last)
		}
		args = append(args, w.size+1)
	}
	return args
}

// sql returns the statement that reads a batch of pages of l and its
// arguments.
func (l pageList) sql(d store.Dialect, wants []pageWant) (string, []any) {
	for i := range wants {
		wants[i].l = l
	}
	return pagesSQL(d, l.statement, wants, nil, "")
}

// pagesSQL returns the statement that reads wants, whose lists share their
// cols and statement, and its arguments; with ids, also the rows of those
// ids, as page -1 (see pageIDs), which takes the statement of runPages,
// and with parentsOf, that of runPagesAndParents.
func pagesSQL(d store.Dialect, statement func(union string) string, wants []pageWant, ids []string, parentsOf string) (string, []any) {
	if parentsOf != "" {
		statement = runPagesAndParents(parentsOf)
	}
	return runsIn(d, statement(pagesUnion(d, wants, ids != nil))), pagesArgs(d, wants, ids)
}

// pagesUnion is keysetUnion with, when byID, the ids bound after the
// keysets' arguments as page -1.
func pagesUnion(d store.Dialect, wants []pageWant, byID bool) string {
	union := keysetUnion(d, wants)
	if !byID {
		return union
	}
	if union != "" {
		union += "\nUNION ALL\n"
	}
	return union + "SELECT -1 AS w, 0 AS ord, ids.id FROM (" + d.TextList(len(keysetArgs(wants))+1) + ") AS ids"
}

func pagesArgs(d store.Dialect, wants []pageWant, ids []string) []any {
	args := keysetArgs(wants)
	if ids != nil {
		args = append(args, d.TextListArg(ids))
	}
	return args
}

// pageStatements are the statements of batches of pages a Reader has read,
// by the shapes of their lists in order and whether runs by id join them:
// a dashboard reads the same few shapes again and again, and formatting
// each statement anew showed in its CPU profile. The zero value is ready;
// it keeps the maxPageStatements shapes used most recently.
type pageStatements struct {
	once  sync.Once
	cache *lru.Cache[string, string]
}

// maxPageStatements bounds the shapes kept.
const maxPageStatements = 256

// of returns pagesSQL(d, statement, wants, ids, parentsOf).
func (p *pageStatements) of(d store.Dialect, statement func(union string) string, wants []pageWant, ids []string, parentsOf string) (string, []any) {
	p.once.Do(func() {
		c, err := lru.New[string, string](maxPageStatements)
		if err != nil {
			panic(err)
		}
		p.cache = c
	})
	var key strings.Builder
	for i, w := range wants {
		if i > 0 {
			key.WriteByte(',')
		}
		key.WriteString(w.l.shape())
	}
	if ids != nil {
		key.WriteString(",ids")
	}
	if parentsOf != "" {
		key.WriteString(",parents " + parentsOf)
	}
	if stmt, ok := p.cache.Get(key.String()); ok {
		return stmt, pagesArgs(d, wants, ids)
	}
	stmt, args := pagesSQL(d, statement, wants, ids, parentsOf)
	p.cache.Add(key.String(), stmt)
	return stmt, args
}

// reading names what a batch of wants reads, for its errors: runs by id
// and its lists' kinds.
func reading(wants []pageWant, ids []string) string {
	kinds := []string{}
	if len(ids) > 0 {
		kinds = append(kinds, "runs")
	}
	for _, w := range wants {
		if k := string(w.l.kind); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return "reading " + strings.Join(kinds, " and ")
}

// readPages reads a batch of pages, reqs[i] of list(i), in the read
// carried by ctx, in one statement: for each row of a page it scans the
// row's own columns into dest and makes its edge with edge (given the
// row's cursor and keyset ordinal and id), then each request's page with
// page. Results are in request order; a bad page size or cursor fails only
// its request.
func readPages[E, P any](ctx context.Context, r *Reader, list func(i int) pageList, reqs []PageRequest, dest []any,
	edge func(pos Position, cursor string, ord int64, id string) E, page func(req PageRequest, edges []E, info PageInfo) P,
	byID *pageIDs) ([]Result[P], error) {
	out := make([]Result[P], len(reqs))
	err := r.with(ctx, func(q *querier) error {
		wants, errs := q.pageWants(reqs, list)
		edges := make([][]E, len(reqs))
		infos := make([]PageInfo, len(reqs))
		var ids []string
		parentsOf := ""
		if byID != nil {
			ids, parentsOf = byID.ids, byID.parentsOf
			if byID.then != nil && !q.mayReadAgain() {
				return errSecondStatement
			}
		}
		if len(wants) > 0 || len(ids) > 0 {
			statement := runPages
			if len(wants) > 0 {
				statement = wants[0].l.statement
			}
			stmt, args := r.pageStmts.of(q.dialect(), statement, wants, ids, parentsOf)
			var wi int64
			var ord, id any
			scan := append([]any{&wi, store.IntDests(&ord)[0], store.TextDests(&id)[0]}, dest...)
			starts := make([]string, len(wants))
			ends := make([]string, len(wants))
			err := q.each(stmt, args, scan, reading(wants, ids), func() error {
				if wi == -1 && byID != nil || wi == -2 && parentsOf != "" {
					return byID.row(q.pos())
				}
				if wi < 0 || int(wi) >= len(wants) {
					return fault.Errorf(fault.PersistenceFailed, "the store answered a page nobody asked for")
				}
				w := wants[wi]
				if len(edges[w.req]) == w.size {
					infos[w.req].HasNextPage = true
					return nil
				}
				// The keyset columns are NOT NULL integers and text in typed
				// columns; should one still not convert, its row fails to
				// decode on its own and the cursor merely cannot be
				// continued from.
				o, _ := toInt(ord)
				s, _ := toText(id)
				c := cursor.Encode(cursor.Cursor{Source: q.pos().Source, Anchor: reqs[w.req].Anchor, Kind: w.l.kind, Ordinal: o, Last: s, Revision: q.pos().Revision})
				if starts[wi] == "" {
					starts[wi] = c
				}
				ends[wi] = c
				edges[w.req] = append(edges[w.req], edge(q.pos(), c, o, s))
				return nil
			})
			if err != nil {
				return err
			}
			for i, w := range wants {
				if ends[i] != "" {
					start, end := starts[i], ends[i]
					infos[w.req].StartCursor = &start
					infos[w.req].EndCursor = &end
				}
				if err := afterCheck(w, reqs[w.req], q.pos()); err != nil {
					errs[w.req], edges[w.req] = err, nil
				}
			}
		}
		for i, req := range reqs {
			if out[i].Err = errs[i]; errs[i] == nil {
				out[i].Value = page(req, edges[i], infos[i])
			}
		}
		if byID != nil && byID.then != nil {
			return byID.then(q)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// only is the list function of a batch whose pages are all of l.
func only(l pageList) func(int) pageList { return func(int) pageList { return l } }
