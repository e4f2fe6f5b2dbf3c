package plan

import (
	"context"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/access"
	"github.com/flowsnap/flowsnap/graph/scalar"
	"github.com/flowsnap/flowsnap/jsonwire"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// The direct answer of a query writes its response from the operation's
// loaders itself, without gqlgen's executor. The executor resolves every
// field through a field context, a middleware chain and a marshaler of its
// own, and every list element in a goroutine: for a batch of runs or a
// page of them that machinery cost most of a request's CPU, while every
// value it formats was read ahead already (readahead.go). The direct
// answer follows the same read-ahead and asks the loaders with the same
// keys, so it reads exactly what the executor reads, and it writes byte for
// byte what the executor writes (TestDirectAnswersAsTheExecutor).
//
// It knows runs by id, every field of Run (its scalars, owner, claim,
// cancellation, waiting, parent, children and rounds pages, and its
// journal: steps of each kind with their attempts and parent steps, the
// current step, inbound events and the lifecycle log, written in
// direct_journal.go), and MissingRun; and the root fields that read by
// themselves (direct_list.go): pages of listRuns, the change feed,
// countRuns and the position, with every field of the types below them.
// Anything else — another field, @defer, an error anywhere (a journal row
// that does not decode, a payload the principal may not read), a null the
// schema forbids —
// makes it give up before it has answered anything, and the executor
// answers the operation instead, finding everything read already.

// directRootFields are the root fields a direct answer knows.
var directRootFields = map[string]bool{"__typename": true, "run": true, "node": true, "runs": true,
	"listRuns": true, "changes": true, "countRuns": true, "position": true}

// DataPrefix is what a direct answer's body holds before its data: the
// data is written after it, in the buffer the body is sent from, so that
// the body needs no copy of it.
const DataPrefix = `{"data":`

// AnswerDirect returns the response of the operation in ctx when every
// field it selects is one the direct answer knows and nothing fails, and
// the buffer its data was written in, DataPrefix before the data (its
// body, to complete: see GiveBuffer); nil leaves the operation to the
// executor.
func AnswerDirect(ctx context.Context, rd *snapshot.Read) (*graphql.Response, []byte) {
	oc := graphql.GetOperationContext(ctx)
	l := from(ctx)
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Query || l == nil {
		return nil, nil
	}
	w := &directWriter{ctx: ctx, oc: oc, l: l, payloads: access.FromContext(ctx).Payloads}
	fields, ok := w.collect(oc.Operation.SelectionSet, "Query")
	if !ok {
		return nil, nil
	}
	for _, f := range fields.fields {
		if !directRootFields[f.Name] {
			return nil, nil
		}
	}
	if _, ok := l.oneRead(oc); ok {
		// One statement reads it all (readAhead): it runs alone.
		rd.Alone()
	}
	readAhead(ctx)
	w.b = append(TakeBuffer(), DataPrefix...)
	if !w.query(fields) {
		GiveBuffer(w.b)
		return nil, nil
	}
	return &graphql.Response{Data: w.b[len(DataPrefix):]}, w.b
}

// buffers holds the buffers direct answers are written in: a batch of runs
// grew a fresh one to its size on every request, twice (data, then body).
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuffer is the largest buffer kept for reuse, so that one huge
// answer does not stay in memory for good.
const maxPooledBuffer = 256 << 10

// TakeBuffer returns an empty buffer to write an answer in, for GiveBuffer
// once it is sent.
func TakeBuffer() []byte {
	b := *buffers.Get().(*[]byte)
	if b == nil {
		b = make([]byte, 0, 4096)
	}
	return b[:0]
}

// GiveBuffer returns b for reuse; nothing may hold b after.
func GiveBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBuffer {
		return
	}
	b = b[:0]
	buffers.Put(&b)
}

// directWriter writes one operation's data. Its methods return false as
// soon as something is not theirs to answer.
type directWriter struct {
	ctx context.Context
	oc  *graphql.OperationContext
	l   *loaders
	b   []byte
	// payloads says the principal may read payload fields; without, the
	// executor answers an operation that selects one, with its FORBIDDEN
	// errors (docs/contract.md#payloads).
	payloads bool
	// collected memoises the fields of a selection set on a type: every
	// element of a list shares its selection. An every-field run has a
	// dozen sets below it, and a page of such runs twice as many; they are
	// found by the address of their first selection, in a table of
	// collectedSlots places, open addressed, that holds up to maxCollected;
	// collectedMap holds the rest.
	collected    [collectedSlots]collectedSet
	nCollected   int
	collectedMap map[collectedKey]*fieldSet
	// parentID and parent are the parent last written (Run.parent).
	parentID string
	parent   snapshot.Snapshot
}

// collectedSlots is the size of a writer's table of selection sets, and
// maxCollected how many it holds before it keeps the rest in a map: a
// table three quarters full still finds most sets in a probe or two.
const (
	collectedSlots = 64
	maxCollected   = 48
)

type collectedSet struct {
	key collectedKey
	set *fieldSet
}

// place is where the writer's table holds key, or the empty place it
// would take: probing from its selection's address (whose lowest bits an
// interface's alignment leaves the same, mixed); the table is never full.
func (w *directWriter) place(key collectedKey) int {
	p := uintptr(unsafe.Pointer(key.first))
	i := int((p>>4 ^ p>>10) % collectedSlots)
	for w.collected[i].set != nil && w.collected[i].key != key {
		i = (i + 1) % collectedSlots
	}
	return i
}

// fieldSet is a selection set's fields on one type, made once per
// operation and written once per element: with each field's key as
// written, and, on the types written most (fieldCodes), the field each
// is, so that an element's fields are told apart by a small integer and
// not by comparing names.
type fieldSet struct {
	fields []graphql.CollectedField
	// keys are `{"alias":` for the first field, `,"alias":` for the rest.
	keys  []string
	codes []uint8
}

// collectedKey names a selection set on a type within one request, in
// which the slice holding the set is the same for every element.
type collectedKey struct {
	first *ast.Selection
	n     int
	typ   string
}

// Write appends p, for the scalars that write themselves.
func (w *directWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// WriteString appends s, for the scalars that write a string (io.WriteString
// would copy it into a slice first).
func (w *directWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

// collect returns sel's fields on typ, an object type, as the executor
// collects and writes them; false when one is deferred.
func (w *directWriter) collect(sel ast.SelectionSet, typ string) (*fieldSet, bool) {
	if len(sel) == 0 {
		return nil, false
	}
	key := collectedKey{first: &sel[0], n: len(sel), typ: typ}
	if set := w.collected[w.place(key)].set; set != nil {
		return set, true
	}
	if set, ok := w.collectedMap[key]; ok {
		return set, true
	}
	fields, d, dk := collectShared(w.oc, sel, w.l.p.implementors[typ])
	if d != nil {
		if set, ok := d.sets.Load(dk); ok {
			w.keep(key, set.(*fieldSet))
			return set.(*fieldSet), true
		}
	}
	for _, f := range fields {
		if f.IsDeferred() {
			return nil, false
		}
	}
	set := newFieldSet(fields, typ)
	if d != nil {
		// No variable decides the set: every request of the document
		// writes it alike.
		d.sets.Store(dk, set)
	}
	w.keep(key, set)
	return set, true
}

// newFieldSet is the set of fields, collected on typ, that a writer
// writes.
func newFieldSet(fields []graphql.CollectedField, typ string) *fieldSet {
	if hasRepeats(fields) {
		// A field selected both on a union or interface and on one of its
		// objects is collected twice; the executor writes the first.
		all := fields
		fields = make([]graphql.CollectedField, 0, len(all))
		seen := make(map[string]bool, len(all))
		for _, f := range all {
			if !seen[f.Alias] {
				seen[f.Alias] = true
				fields = append(fields, f)
			}
		}
	}
	set := &fieldSet{fields: fields, keys: make([]string, len(fields))}
	for i, f := range fields {
		// An alias is a GraphQL name ([_A-Za-z][_0-9A-Za-z]*, as the
		// parser reads one), which JSON quotes as it is.
		open := ","
		if i == 0 {
			open = "{"
		}
		set.keys[i] = open + `"` + f.Alias + `":`
	}
	if codes := fieldCodes[typ]; codes != nil {
		set.codes = make([]uint8, len(fields))
		for i, f := range fields {
			set.codes[i] = codes[f.Name]
		}
	}
	return set
}

// keep keeps set as the request's set of key.
func (w *directWriter) keep(key collectedKey, set *fieldSet) {
	switch {
	case w.nCollected < maxCollected:
		w.collected[w.place(key)] = collectedSet{key: key, set: set}
		w.nCollected++
	case w.collectedMap == nil:
		w.collectedMap = map[collectedKey]*fieldSet{key: set}
	default:
		w.collectedMap[key] = set
	}
}

// hasRepeats reports whether two of fields share an alias. A selection is
// most often a handful of fields, which need no map to compare.
func hasRepeats(fields []graphql.CollectedField) bool {
	if len(fields) > 16 {
		seen := make(map[string]bool, len(fields))
		for _, f := range fields {
			if seen[f.Alias] {
				return true
			}
			seen[f.Alias] = true
		}
		return false
	}
	for i, f := range fields {
		for _, g := range fields[:i] {
			if g.Alias == f.Alias {
				return true
			}
		}
	}
	return false
}

// object writes an object of set's fields, each by field; an object
// without fields is {}.
func (w *directWriter) object(set *fieldSet, field func(f graphql.CollectedField) bool) bool {
	for i, f := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		if !field(f) {
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

// close ends an object of n fields.
func (w *directWriter) close(n int) {
	if n == 0 {
		w.b = append(w.b, '{')
	}
	w.b = append(w.b, '}')
}

func (w *directWriter) query(fields *fieldSet) bool {
	return w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "Query")
		case "run", "node":
			a := w.l.argsOf(f, w.oc)
			id := a.id("id")
			if a.bad {
				return false
			}
			snap, err := w.l.runs.one(w.ctx, id)
			if err != nil {
				return false
			}
			return w.snapshot(f.Selections, snap)
		case "runs":
			a := w.l.argsOf(f, w.oc)
			keys, err := runsKeys(a.ids("ids"))
			if a.bad || err != nil || len(keys) == 0 {
				// An empty batch reads the position: the executor's.
				return false
			}
			snaps, err := w.l.runs.get(w.ctx, keys)
			if err != nil {
				return false
			}
			return w.snapshots(f.Selections, len(snaps), func(i int) snapshot.Snapshot { return snaps[i] })
		case "listRuns", "changes", "countRuns", "position":
			return w.root(f)
		default:
			return false
		}
		return true
	})
}

// snapshots writes a list of n snapshots, none of them null.
func (w *directWriter) snapshots(sel ast.SelectionSet, n int, at func(i int) snapshot.Snapshot) bool {
	w.b = append(w.b, '[')
	for i := range n {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		if !w.snapshot(sel, at(i)) {
			return false
		}
	}
	w.b = append(w.b, ']')
	return true
}

// snapshot writes a Run or a MissingRun; never null.
func (w *directWriter) snapshot(sel ast.SelectionSet, snap snapshot.Snapshot) bool {
	switch s := snap.(type) {
	case *snapshot.Run:
		return s != nil && w.run(sel, s)
	case *snapshot.Missing:
		return s != nil && w.missing(sel, s)
	}
	return false
}

func (w *directWriter) missing(sel ast.SelectionSet, m *snapshot.Missing) bool {
	fields, ok := w.collect(sel, "MissingRun")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "MissingRun")
		case "id":
			w.b = jsonwire.AppendQuoted(w.b, m.ID)
		case "deleted":
			w.b = appendBool(w.b, m.Deleted)
		case "deletedAtRevision":
			w.b = appendOptInt(w.b, m.DeletedAtRevision)
		default:
			return false
		}
		return true
	})
}

func (w *directWriter) run(sel ast.SelectionSet, r *snapshot.Run) bool {
	set, ok := w.collect(sel, "Run")
	if !ok {
		return false
	}
	for i, f := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		if !w.runField(runField(set.codes[i]), f, r) {
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

// fieldCodes are, by type, the fields of the types written once per
// element of a page, by name, each as the code its writer switches on; a
// name not among them is 0, which the writer does not know.
var fieldCodes = map[string]map[string]uint8{
	"Run":   runFields,
	"Owner": {"__typename": ownerTypename, "hostId": ownerHostID, "pid": ownerPID, "nonce": ownerNonce},
	"Claim": {"__typename": claimTypename, "owner": claimOwner, "claimedAt": claimClaimedAt},
	"Cancellation": {"__typename": cancellationTypename, "requestedAt": cancellationRequestedAt,
		"acknowledgement": cancellationAcknowledgement},
	"CancelAcknowledgement": {"__typename": acknowledgementTypename, "observedAt": acknowledgementObservedAt,
		"owner": acknowledgementOwner},
	"Waiting": {"__typename": waitingTypename, "kind": waitingKind, "reason": waitingReason, "wakeAt": waitingWakeAt,
		"tokenDigest": waitingTokenDigest, "request": waitingRequest},
	"RunEdge": {"__typename": edgeTypename, "cursor": edgeCursor, "ordinal": edgeOrdinal, "node": edgeNode},
}

// The fields of the types of fieldCodes but Run's, by type.
const (
	ownerTypename = iota + 1
	ownerHostID
	ownerPID
	ownerNonce
)

const (
	claimTypename = iota + 1
	claimOwner
	claimClaimedAt
)

const (
	cancellationTypename = iota + 1
	cancellationRequestedAt
	cancellationAcknowledgement
)

const (
	acknowledgementTypename = iota + 1
	acknowledgementObservedAt
	acknowledgementOwner
)

const (
	waitingTypename = iota + 1
	waitingKind
	waitingReason
	waitingWakeAt
	waitingTokenDigest
	waitingRequest
)

const (
	edgeTypename = iota + 1
	edgeCursor
	edgeOrdinal
	edgeNode
)

// runFields are the fields of Run by name, each as the code runField
// switches on.
var runFields = map[string]uint8{
	"__typename": runTypename, "id": runID, "revision": runRevision, "status": runStatus,
	"flowName": runFlowName, "state": runState, "createdAt": runCreatedAt, "startedAt": runStartedAt,
	"finishedAt": runFinishedAt, "heartbeatAt": runHeartbeatAt, "owner": runOwner,
	"parentRunId": runParentRunID, "executionParentId": runExecutionParentID, "lineageId": runLineageID,
	"roundOrdinal": runRoundOrdinal, "waiting": runWaiting, "claim": runClaim,
	"cancellation": runCancellation, "parent": runParent, "children": runPage, "rounds": runPage,
	"steps": runJournal, "currentStep": runJournal, "inboundEvents": runJournal, "events": runJournal,
}

type runField uint8

const (
	runUnknown = iota
	runTypename
	runID
	runRevision
	runStatus
	runFlowName
	runState
	runCreatedAt
	runStartedAt
	runFinishedAt
	runHeartbeatAt
	runOwner
	runParentRunID
	runExecutionParentID
	runLineageID
	runRoundOrdinal
	runWaiting
	runClaim
	runCancellation
	runParent
	runPage
	runJournal
)

// runField writes the value of f, the field code names, of r.
func (w *directWriter) runField(code runField, f graphql.CollectedField, r *snapshot.Run) bool {
	switch code {
	case runTypename:
		w.b = jsonwire.AppendQuoted(w.b, "Run")
	case runID:
		w.b = jsonwire.AppendQuoted(w.b, r.ID)
	case runRevision:
		w.b = scalar.AppendSafeInt(w.b, r.Revision)
	case runStatus:
		scalar.MarshalRunStatus(r.Status).MarshalGQL(w)
	case runFlowName:
		w.b = jsonwire.AppendQuoted(w.b, r.FlowName)
	case runState:
		if r.State == nil || !w.payloads {
			return false
		}
		// Decoded in a response's form (snapshot.Run.State).
		w.b = append(w.b, r.State...)
	case runCreatedAt:
		w.b = scalar.AppendDateTime(w.b, r.CreatedAt)
	case runStartedAt:
		w.b = appendOptDateTime(w.b, r.StartedAt)
	case runFinishedAt:
		w.b = appendOptDateTime(w.b, r.FinishedAt)
	case runHeartbeatAt:
		w.b = appendOptDateTime(w.b, r.HeartbeatAt)
	case runOwner:
		if r.Owner == nil {
			w.b = append(w.b, "null"...)
			return true
		}
		return w.owner(f.Selections, r.Owner)
	case runParentRunID:
		w.b = appendOptQuoted(w.b, r.ParentRunID)
	case runExecutionParentID:
		w.b = appendOptQuoted(w.b, r.ExecutionParentID)
	case runLineageID:
		w.b = jsonwire.AppendQuoted(w.b, r.LineageID)
	case runRoundOrdinal:
		w.b = scalar.AppendSafeInt(w.b, r.RoundOrdinal)
	case runWaiting:
		if r.Waiting == nil {
			w.b = append(w.b, "null"...)
			return true
		}
		return w.waiting(f.Selections, r.Waiting)
	case runClaim:
		if r.Claim == nil {
			w.b = append(w.b, "null"...)
			return true
		}
		return w.claim(f.Selections, r.Claim)
	case runCancellation:
		return w.cancellation(f.Selections, &r.Cancellation)
	case runParent:
		if r.ExecutionParentID == nil {
			w.b = append(w.b, "null"...)
			return true
		}
		// The key the read-ahead asked for (parentKeys). Runs listed
		// together often share their parent, which is then looked up once.
		id := *r.ExecutionParentID
		if w.parent == nil || w.parentID != id {
			snap, err := w.l.runs.one(w.ctx, id)
			if err != nil {
				return false
			}
			w.parentID, w.parent = id, snap
		}
		return w.snapshot(f.Selections, w.parent)
	case runPage:
		return w.page(f, r)
	case runJournal:
		return w.journal(f, r)
	default:
		return false
	}
	return true
}

func (w *directWriter) claim(sel ast.SelectionSet, c *snapshot.Claim) bool {
	set, ok := w.collect(sel, "Claim")
	if !ok {
		return false
	}
	for i, f := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		switch set.codes[i] {
		case claimTypename:
			w.b = jsonwire.AppendQuoted(w.b, "Claim")
		case claimOwner:
			if !w.owner(f.Selections, &c.Owner) {
				return false
			}
		case claimClaimedAt:
			w.b = scalar.AppendDateTime(w.b, c.ClaimedAt)
		default:
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

func (w *directWriter) cancellation(sel ast.SelectionSet, c *snapshot.Cancellation) bool {
	set, ok := w.collect(sel, "Cancellation")
	if !ok {
		return false
	}
	for i, f := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		switch set.codes[i] {
		case cancellationTypename:
			w.b = jsonwire.AppendQuoted(w.b, "Cancellation")
		case cancellationRequestedAt:
			w.b = appendOptDateTime(w.b, c.RequestedAt)
		case cancellationAcknowledgement:
			if c.Acknowledgement == nil {
				w.b = append(w.b, "null"...)
			} else if !w.acknowledgement(f.Selections, c.Acknowledgement) {
				return false
			}
		default:
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

func (w *directWriter) acknowledgement(sel ast.SelectionSet, a *snapshot.CancelAcknowledgement) bool {
	set, ok := w.collect(sel, "CancelAcknowledgement")
	if !ok {
		return false
	}
	for i, f := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		switch set.codes[i] {
		case acknowledgementTypename:
			w.b = jsonwire.AppendQuoted(w.b, "CancelAcknowledgement")
		case acknowledgementObservedAt:
			w.b = scalar.AppendDateTime(w.b, a.ObservedAt)
		case acknowledgementOwner:
			if !w.owner(f.Selections, &a.Owner) {
				return false
			}
		default:
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

func (w *directWriter) owner(sel ast.SelectionSet, o *vocab.Owner) bool {
	set, ok := w.collect(sel, "Owner")
	if !ok {
		return false
	}
	for i := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		switch set.codes[i] {
		case ownerTypename:
			w.b = jsonwire.AppendQuoted(w.b, "Owner")
		case ownerHostID:
			w.b = jsonwire.AppendQuoted(w.b, o.HostID)
		case ownerPID:
			w.b = scalar.AppendSafeInt(w.b, o.PID)
		case ownerNonce:
			w.b = jsonwire.AppendQuoted(w.b, o.Nonce)
		default:
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

func (w *directWriter) waiting(sel ast.SelectionSet, wt *snapshot.Waiting) bool {
	set, ok := w.collect(sel, "Waiting")
	if !ok {
		return false
	}
	for i := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		switch set.codes[i] {
		case waitingTypename:
			w.b = jsonwire.AppendQuoted(w.b, "Waiting")
		case waitingKind:
			scalar.MarshalWaitingKind(wt.Kind).MarshalGQL(w)
		case waitingReason:
			w.b = jsonwire.AppendQuoted(w.b, wt.Reason)
		case waitingWakeAt:
			w.b = appendOptDateTime(w.b, wt.WakeAt)
		case waitingTokenDigest:
			w.b = appendOptQuoted(w.b, wt.TokenDigest)
		case waitingRequest:
			if !w.payloads {
				return false
			}
			w.b = appendJSONForm(w.b, wt.Request)
		default:
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

// page writes r's children or rounds page, read with the keys the
// read-ahead asked for.
func (w *directWriter) page(f graphql.CollectedField, r *snapshot.Run) bool {
	a := w.l.argsOf(f, w.oc)
	first, after := a.int("first"), a.string("after")
	if a.bad {
		return false
	}
	objs := []*snapshot.Run{r}
	var pages []*snapshot.Page
	var err error
	if f.Name == "children" {
		pages, err = w.l.pages.get(w.ctx, childrenKeys(objs, first, after))
	} else {
		pages, err = w.l.pages.get(w.ctx, roundsKeys(objs, first, after))
	}
	if err != nil || len(pages) != 1 || pages[0] == nil {
		return false
	}
	return w.connection(f.Selections, pages[0])
}

// connection writes a page of runs: a run's children or rounds, or a page
// of listRuns.
func (w *directWriter) connection(sel ast.SelectionSet, p *snapshot.Page) bool {
	fields, ok := w.collect(sel, "RunConnection")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "RunConnection")
		case "edges":
			w.b = append(w.b, '[')
			for i := range p.Edges {
				if i > 0 {
					w.b = append(w.b, ',')
				}
				if !w.edge(f.Selections, &p.Edges[i]) {
					return false
				}
			}
			w.b = append(w.b, ']')
		case "nodes":
			for _, e := range p.Edges {
				if e.Node.Err != nil {
					return false
				}
			}
			return w.snapshots(f.Selections, len(p.Edges), func(i int) snapshot.Snapshot { return p.Edges[i].Node.Value })
		case "pageInfo":
			return w.pageInfo(f.Selections, &p.PageInfo)
		default:
			return false
		}
		return true
	})
}

func (w *directWriter) edge(sel ast.SelectionSet, e *snapshot.Edge) bool {
	set, ok := w.collect(sel, "RunEdge")
	if !ok {
		return false
	}
	for i, f := range set.fields {
		w.b = append(w.b, set.keys[i]...)
		switch set.codes[i] {
		case edgeTypename:
			w.b = jsonwire.AppendQuoted(w.b, "RunEdge")
		case edgeCursor:
			w.b = jsonwire.AppendQuoted(w.b, e.Cursor)
		case edgeOrdinal:
			w.b = scalar.AppendSafeInt(w.b, e.Ordinal)
		case edgeNode:
			if e.Node.Err != nil || !w.snapshot(f.Selections, e.Node.Value) {
				return false
			}
		default:
			return false
		}
	}
	w.close(len(set.fields))
	return true
}

func (w *directWriter) pageInfo(sel ast.SelectionSet, p *snapshot.PageInfo) bool {
	fields, ok := w.collect(sel, "PageInfo")
	return ok && w.object(fields, func(f graphql.CollectedField) bool {
		switch f.Name {
		case "__typename":
			w.b = jsonwire.AppendQuoted(w.b, "PageInfo")
		case "hasNextPage":
			w.b = appendBool(w.b, p.HasNextPage)
		case "hasPreviousPage":
			w.b = appendBool(w.b, p.HasPreviousPage)
		case "startCursor":
			w.b = appendOptQuoted(w.b, p.StartCursor)
		case "endCursor":
			w.b = appendOptQuoted(w.b, p.EndCursor)
		default:
			return false
		}
		return true
	})
}

// appendJSONForm appends a JSON value kept in a response's form
// (jsonwire.ResponseForm), null when there is none.
func appendJSONForm(b []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

func appendOptQuoted(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonwire.AppendQuoted(b, *s)
}

func appendOptDateTime(b []byte, ms *snapshot.Millis) []byte {
	if ms == nil {
		return append(b, "null"...)
	}
	return scalar.AppendDateTime(b, *ms)
}

func appendOptInt(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return scalar.AppendSafeInt(b, *n)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
