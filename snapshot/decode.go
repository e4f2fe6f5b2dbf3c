package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/jsonwire"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// runColumns are the columns of a run read, in the order rawRun.dest scans
// them; whether the run's row exists is read as 1 or NULL, since its id is
// q.id. The earliest spawn edge's parent is read beside the row so that the
// effective parent can be checked (run invariant 3, ARCHITECTURE.md)
// without another statement; only a run without parent_run_id needs it.
const runColumns = `q.id, c.revision, c.deleted, CASE WHEN r.run_id IS NOT NULL THEN 1 END, r.status,
	r.created_at_ms, r.started_at_ms, r.finished_at_ms,
	r.owner_host_id, r.owner_pid, r.owner_nonce, r.heartbeat_at_ms,
	r.claim_host_id, r.claim_pid, r.claim_nonce, r.claimed_at_ms,
	r.state_json, r.parent_run_id, r.execution_parent_id, r.lineage_id, r.round_ordinal,
	r.cancel_requested_at_ms, r.cancel_acknowledgement_json,
	r.waiting_reason, r.waiting_wake_at_ms, ` + sqliteTokenColumns + `, r.waiting_request,
	CASE WHEN r.parent_run_id IS NULL THEN
		(SELECT e.parent_id FROM flows_run_parents e WHERE e.child_id = q.id ORDER BY e.seq, e.parent_id LIMIT 1) END`

// sqliteTokenColumns are the waiting token's columns in runColumns as
// SQLite reads them, which runsIn replaces with those of the statement's
// dialect (store.Dialect.WaitingTokenColumns): on PostgreSQL the digest,
// so that serve needs no privilege on the token (docs/contract.md#least-privilege).
const sqliteTokenColumns = `r.waiting_token, NULL`

// runsIn returns a statement of runColumns in dialect d.
func runsIn(d store.Dialect, sql string) string {
	return strings.Replace(sql, sqliteTokenColumns, d.WaitingTokenColumns(), 1)
}

func selectRuns(d store.Dialect) string {
	return runsIn(d, `WITH q(id) AS (`+d.TextList(1)+`)
SELECT `+runColumns+`
FROM q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id`)
}

// selectRunsAndParents is selectRuns of a batch of ids and of their runs'
// parents that are not among them (see Reader.RunsAndParents).
func selectRunsAndParents(d store.Dialect) string {
	return runsIn(d, `WITH `+withParents(d)+`
SELECT `+runColumns+`
FROM q
LEFT JOIN flows_run_changes c ON c.run_id = q.id
LEFT JOIN flows_runs r ON r.run_id = q.id`)
}

// rawRun holds a run's columns as the driver returned them. Every column is
// scanned as a plain value and converted here, so that a row holding a value
// of the wrong type (possible in SQLite, whose columns are not typed) fails
// its own element with DECODE_FAILED instead of failing the whole read.
type rawRun struct {
	// id is the run's id, which the caller sets from idText, the row's
	// (to the id it asked for, or to rowID's copy), before decoding.
	id                                                       string
	idText                                                   any
	revision, deleted, runID, status                         any
	createdAt, startedAt, finishedAt                         any
	ownerHost, ownerPid, ownerNonce, heartbeat               any
	claimHost, claimPid, claimNonce, claimedAt               any
	state, parentRunID, executionParentID, lineage, ordinal  any
	cancelRequested, cancelAck                               any
	waitingReason, waitingWake, waitingToken, waitingRequest any
	// waitingDigest is the token's digest where the store keeps it
	// (PostgreSQL), waitingToken then NULL.
	waitingDigest any
	edgeParent    any
}

// revisionDest returns the scan destinations of a change row
// (selectRevisions): the id asked for, its revision and tombstone, and
// whether the run's row exists.
func (w *rawRun) revisionDest() []any {
	ints := store.IntDests(&w.revision, &w.deleted)
	return []any{store.TextDests(&w.idText)[0], ints[0], ints[1], &w.runID}
}

// dest returns the scan destinations of w's columns, the integer ones
// through store.IntDests and the text ones through store.TextDests: read
// from PostgreSQL, an integer is held as an *int64 (which toInt reads) and
// a text as a *store.Text (which toText and toBytes read), valid until the
// next row is scanned.
func (w *rawRun) dest() []any {
	n := store.IntDests(&w.revision, &w.deleted,
		&w.createdAt, &w.startedAt, &w.finishedAt,
		&w.ownerPid, &w.heartbeat, &w.claimPid, &w.claimedAt,
		&w.ordinal, &w.cancelRequested, &w.waitingWake)
	t := store.TextDests(&w.idText, &w.status, &w.ownerHost, &w.ownerNonce, &w.claimHost, &w.claimNonce,
		&w.state, &w.parentRunID, &w.executionParentID, &w.lineage, &w.cancelAck,
		&w.waitingReason, &w.waitingToken, &w.waitingDigest, &w.waitingRequest, &w.edgeParent)
	return []any{t[0], n[0], n[1], &w.runID, t[1],
		n[2], n[3], n[4],
		t[2], n[5], t[3], n[6],
		t[4], n[7], t[5], n[8],
		t[6], t[7], t[8], t[9], n[9],
		n[10], t[10],
		t[11], n[11], t[12], t[13], t[14],
		t[15]}
}

// rowID returns a copy of the row's id.
func (w *rawRun) rowID() string {
	s, _ := toText(w.idText)
	return s
}

// indexOf returns where the text v holds, as toText accepts it, is in m,
// without copying it.
func indexOf(m map[string]int, v any) (int, bool) {
	var i int
	var ok bool
	switch s := v.(type) {
	case string:
		i, ok = m[s]
	case *store.Text:
		i, ok = m[string(*s)]
	}
	return i, ok
}

// decodeError collects the first problem of a row's decoding.
type decodeError struct{ msg string }

func (d *decodeError) fail(format string, args ...any) {
	if d.msg == "" {
		d.msg = fmt.Sprintf(format, args...)
	}
}

// natural converts a non-null column to an integer in 0..2^53−1.
func (d *decodeError) natural(col string, v any) int64 {
	n, ok := toInt(v)
	if !ok || n < 0 || n > vocab.MaxSafe {
		d.fail("column %s is not an integer in 0..2^53-1", col)
		return 0
	}
	return n
}

func (d *decodeError) optMillis(col string, v any) *Millis {
	if v == nil {
		return nil
	}
	return d.optMillisIn(col, v, new(Millis))
}

// optMillisIn is optMillis keeping the value in cell.
func (d *decodeError) optMillisIn(col string, v any, cell *Millis) *Millis {
	if v == nil {
		return nil
	}
	*cell = Millis(d.natural(col, v))
	return cell
}

func (d *decodeError) text(col string, v any) string {
	s, ok := toText(v)
	if !ok {
		d.fail("column %s is not text", col)
	}
	return s
}

func (d *decodeError) optText(col string, v any) *string {
	if v == nil {
		return nil
	}
	s := d.text(col, v)
	return &s
}

func (d *decodeError) ident(col string, v any) string {
	s := d.text(col, v)
	if !vocab.ValidID(s) {
		d.fail("column %s is not a valid identifier", col)
	}
	return s
}

func (d *decodeError) optIdent(col string, v any) *string {
	if v == nil {
		return nil
	}
	return d.optIdentIn(col, v, new(string))
}

// optIdentIn is optIdent keeping the value in cell.
func (d *decodeError) optIdentIn(col string, v any, cell *string) *string {
	if v == nil {
		return nil
	}
	*cell = d.ident(col, v)
	return cell
}

// status returns the status column, which must be one of vocab.Statuses,
// as the constant it is, so that a run's status is not a copy of its own.
func (d *decodeError) status(v any) vocab.Status {
	if t, ok := v.(*store.Text); ok {
		for _, s := range vocab.Statuses {
			if string(*t) == string(s) {
				return s
			}
		}
	}
	s := vocab.Status(d.text("status", v))
	if d.msg == "" && !s.Valid() {
		d.fail("status is not one of pending, running, suspended, completed, failed, cancelled")
	}
	return s
}

// json returns the column's text when it is one valid JSON value.
func (d *decodeError) json(col string, v any) json.RawMessage {
	doc, ok := toBytes(v)
	if !ok {
		d.fail("column %s is not text", col)
		return nil
	}
	if !jsonwire.Valid(doc) {
		d.fail("column %s is not valid JSON", col)
		return nil
	}
	return doc
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case *int64:
		return *n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) <= vocab.MaxSafe {
			return int64(n), true
		}
	}
	return 0, false
}

// toText accepts only text: a string, as SQLite's driver and a plain scan
// return it, or PostgreSQL's bytes through a store.TextDest (a *store.Text);
// a []byte is a SQLite BLOB, which a store without STRICT tables lets into
// any column and which SQLite's JSON functions would even read as binary
// JSONB, so it is a value of the wrong type like any other.
func toText(v any) (string, bool) { return store.AsText(v) }

// toBytes returns a copy of the text v holds, as toText accepts it.
func toBytes(v any) ([]byte, bool) {
	switch s := v.(type) {
	case string:
		return []byte(s), true
	case *store.Text:
		return bytes.Clone(*s), true
	}
	return nil, false
}

// decode turns a scanned row into a Snapshot, checking the run invariants
// (ARCHITECTURE.md, "The contract") against pos. A row that breaks one
// yields a DECODE_FAILED error naming the run and nothing of the row.
func (w *rawRun) decode(pos Position) (Snapshot, error) {
	var d decodeError
	if w.runID == nil {
		if w.revision == nil {
			return &Missing{ID: w.id}, nil
		}
		rev := d.natural("flows_run_changes.revision", w.revision)
		deleted := d.natural("flows_run_changes.deleted", w.deleted)
		switch {
		case d.msg != "":
		case deleted != 1:
			d.fail("its change row says it is live, but it has no row")
		case rev < 1 || rev > pos.Revision:
			d.fail("its tombstone revision %d is outside 1..%d", rev, pos.Revision)
		default:
			return &Missing{ID: w.id, Deleted: true, DeletedAtRevision: &rev}, nil
		}
		return nil, w.failed(d.msg)
	}
	run := w.decodeRun(&d, pos)
	if d.msg != "" {
		return nil, w.failed(d.msg)
	}
	return run, nil
}

func (w *rawRun) failed(msg string) error {
	return &fault.Error{Code: fault.DecodeFailed, RunID: w.id,
		Message: fmt.Sprintf("run %s cannot be decoded: %s", vocab.Quote(w.id), msg)}
}

// runBox is a run with room for the optional values most runs have, so
// that a run is decoded in one allocation instead of one per value: a batch
// of runs made as many allocations of its optional times and ids as of
// everything else. Owner, claim and waiting, which only some runs have,
// are allocated when present, so that every run is not the larger for them.
type runBox struct {
	run                                     Run
	started, finished, heartbeat, cancelled Millis
	wake                                    Millis
	parent, executionParent, edgeParent     string
}

func (w *rawRun) decodeRun(d *decodeError, pos Position) *Run {
	box := &runBox{run: Run{ID: w.id}}
	run := &box.run
	if w.revision == nil {
		d.fail("it has no change row")
	} else {
		run.Revision = d.natural("flows_run_changes.revision", w.revision)
		if d.natural("flows_run_changes.deleted", w.deleted) != 0 {
			d.fail("its change row is a tombstone, but its row exists")
		}
		if run.Revision < 1 || run.Revision > pos.Revision {
			d.fail("its revision %d is outside 1..%d", run.Revision, pos.Revision)
		}
	}
	run.Status = d.status(w.status)
	run.CreatedAt = Millis(d.natural("created_at_ms", w.createdAt))
	run.StartedAt = d.optMillisIn("started_at_ms", w.startedAt, &box.started)
	run.FinishedAt = d.optMillisIn("finished_at_ms", w.finishedAt, &box.finished)

	// 1. owner fields all set iff running.
	ownerSet := w.ownerHost != nil && w.ownerPid != nil && w.ownerNonce != nil && w.heartbeat != nil
	ownerAny := w.ownerHost != nil || w.ownerPid != nil || w.ownerNonce != nil || w.heartbeat != nil
	switch {
	case run.Status == vocab.StatusRunning && !ownerSet:
		d.fail("it is running but its owner fields are not all set")
	case run.Status != vocab.StatusRunning && ownerAny:
		d.fail("it is %s but has owner fields set", run.Status)
	case ownerSet:
		run.Owner = &vocab.Owner{
			HostID: d.ident("owner_host_id", w.ownerHost),
			PID:    d.natural("owner_pid", w.ownerPid),
			Nonce:  d.ident("owner_nonce", w.ownerNonce),
		}
		run.HeartbeatAt = d.optMillisIn("heartbeat_at_ms", w.heartbeat, &box.heartbeat)
	}

	claimSet := w.claimHost != nil && w.claimPid != nil && w.claimNonce != nil && w.claimedAt != nil
	claimAny := w.claimHost != nil || w.claimPid != nil || w.claimNonce != nil || w.claimedAt != nil
	if claimAny && !claimSet {
		d.fail("its claim fields are only partly set")
	} else if claimSet {
		run.Claim = &Claim{
			Owner: vocab.Owner{
				HostID: d.ident("claim_host_id", w.claimHost),
				PID:    d.natural("claim_pid", w.claimPid),
				Nonce:  d.ident("claim_nonce", w.claimNonce),
			},
			ClaimedAt: Millis(d.natural("claimed_at_ms", w.claimedAt)),
		}
	}

	run.State, run.FlowName = state(d, w.state)

	// 3. the effective parent.
	run.ParentRunID = d.optIdentIn("parent_run_id", w.parentRunID, &box.parent)
	run.ExecutionParentID = d.optIdentIn("execution_parent_id", w.executionParentID, &box.executionParent)
	want := run.ParentRunID
	if want == nil {
		want = d.optIdentIn("flows_run_parents.parent_id", w.edgeParent, &box.edgeParent)
	}
	switch {
	case (want == nil) != (run.ExecutionParentID == nil),
		want != nil && *want != *run.ExecutionParentID:
		d.fail("execution_parent_id does not match its parent_run_id or earliest spawn edge")
	case want != nil && *want == run.ID:
		d.fail("it is its own parent")
	}

	// 4. lineage.
	switch {
	case (w.lineage == nil) != (w.ordinal == nil):
		d.fail("lineage_id and round_ordinal must be both null or both set")
	case w.lineage == nil:
		run.LineageID = run.ID
	default:
		run.LineageID = d.ident("lineage_id", w.lineage)
		run.RoundOrdinal = d.natural("round_ordinal", w.ordinal)
	}

	// 6. cancellation.
	run.Cancellation.RequestedAt = d.optMillisIn("cancel_requested_at_ms", w.cancelRequested, &box.cancelled)
	if w.cancelAck != nil {
		if run.Cancellation.RequestedAt == nil {
			d.fail("it has a cancellation acknowledgement without a request")
		}
		run.Cancellation.Acknowledgement = cancelAck(d, d.json("cancel_acknowledgement_json", w.cancelAck))
	}

	// 5. waiting.
	if w.waitingReason == nil {
		if w.waitingWake != nil || w.waitingToken != nil || w.waitingDigest != nil || w.waitingRequest != nil {
			d.fail("it has waiting details without a waiting reason")
		}
	} else {
		reason := d.text("waiting_reason", w.waitingReason)
		wt := &Waiting{Kind: vocab.KindOf(reason), Reason: reason, WakeAt: d.optMillisIn("waiting_wake_at_ms", w.waitingWake, &box.wake)}
		if w.waitingDigest != nil {
			digest, ok := toText(w.waitingDigest)
			if !ok || len(digest) != 2*sha256.Size || !isLowerHex(digest) {
				d.fail("column waiting_token_digest is not a lowercase hex SHA-256")
			}
			wt.TokenDigest = &digest
		} else if w.waitingToken != nil {
			token, ok := toBytes(w.waitingToken)
			if !ok {
				d.fail("column waiting_token is not text")
			}
			sum := sha256.Sum256(token)
			digest := hex.EncodeToString(sum[:])
			wt.TokenDigest = &digest
		}
		if w.waitingRequest != nil {
			wt.Request = jsonwire.ResponseForm(d.json("waiting_request", w.waitingRequest))
		}
		run.Waiting = wt
	}
	return run
}

// state returns the state column and its flowName, which must be a
// non-empty string in a JSON object. The state is the largest column of a
// run and this is the hottest decoding there is, so it validates the
// document in one pass (jsonwire.Valid), finds flowName with a scan of the top level, and takes its
// text from the column itself when it has no escapes, unmarshalling only a
// name that has.
func state(d *decodeError, v any) (json.RawMessage, string) {
	doc, ok := toBytes(v)
	if !ok {
		d.fail("column state_json is not text")
		return nil, ""
	}
	if !jsonwire.Valid(doc) {
		d.fail("column state_json is not valid JSON")
		return nil, ""
	}
	start, end, found, object := jsonwire.TopLevelValue(doc, "flowName")
	switch {
	case !object:
		d.fail("state_json is not a JSON object")
		return nil, ""
	case !found:
		d.fail("state_json has no flowName")
		return nil, ""
	}
	var name string
	if plainString(doc[start:end]) {
		if s, isString := v.(string); isString {
			name = s[start+1 : end-1]
		} else {
			name = string(doc[start+1 : end-1])
		}
	} else {
		// A name of its own for Unmarshal, which makes it escape: name
		// would otherwise be allocated for every run, not only these.
		var escaped string
		ok = json.Unmarshal(doc[start:end], &escaped) == nil
		name = escaped
	}
	if !ok || strings.TrimSpace(name) == "" {
		d.fail("state_json's flowName is not a non-empty string")
	}
	// Kept as a response writes it (Run.State), once per row read rather
	// than once per answer.
	return jsonwire.ResponseForm(doc), name
}

// plainString says that quoted is a JSON string without escapes whose
// text is valid UTF-8 (a valid JSON string has no control characters), so
// that its text is what lies between the quotes: encoding/json replaces
// invalid UTF-8, which json.Valid lets through.
func plainString(quoted []byte) bool {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return false
	}
	text := quoted[1 : len(quoted)-1]
	return bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text)
}

func cancelAck(d *decodeError, raw json.RawMessage) *CancelAcknowledgement {
	if raw == nil {
		return nil
	}
	a, ok := engineAck(raw)
	if !ok {
		if a, ok = decodedAck(raw); !ok {
			d.fail("cancel_acknowledgement_json is not {observedAtMs, owner: {hostId, pid, nonce}}")
			return nil
		}
	}
	observed, err1 := a.observed.Int64()
	pid, err2 := a.pid.Int64()
	if err1 != nil || err2 != nil || observed < 0 || observed > vocab.MaxSafe || pid < 0 || pid > vocab.MaxSafe ||
		!vocab.ValidID(a.host) || !vocab.ValidID(a.nonce) {
		d.fail("cancel_acknowledgement_json has a malformed field")
		return nil
	}
	return &CancelAcknowledgement{ObservedAt: Millis(observed), Owner: vocab.Owner{HostID: a.host, PID: pid, Nonce: a.nonce}}
}

// ackFields are the members of a cancellation acknowledgement, as
// encoding/json decodes them with numbers kept as their text.
type ackFields struct {
	observed, pid json.Number
	host, nonce   string
}

// decodedAck decodes an acknowledgement with encoding/json: false when a
// member is missing or null or the document is not an object of that shape.
func decodedAck(raw json.RawMessage) (ackFields, bool) {
	var a struct {
		ObservedAtMs *json.Number `json:"observedAtMs"`
		Owner        *struct {
			HostID *string      `json:"hostId"`
			Pid    *json.Number `json:"pid"`
			Nonce  *string      `json:"nonce"`
		} `json:"owner"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil || a.ObservedAtMs == nil || a.Owner == nil ||
		a.Owner.HostID == nil || a.Owner.Pid == nil || a.Owner.Nonce == nil {
		return ackFields{}, false
	}
	return ackFields{observed: *a.ObservedAtMs, pid: *a.Owner.Pid, host: *a.Owner.HostID, nonce: *a.Owner.Nonce}, true
}

// engineAck reads an acknowledgement written as the engine writes it,
// {"observedAtMs":N,"owner":{"hostId":"S","pid":N,"nonce":"S"}} without
// space, each N at most 16 digits without a leading zero and each S valid
// UTF-8 without an escape: what decodedAck would make of it, with one
// allocation in place of a score of them. Any other text is false, for
// decodedAck to read. Read by hand because BenchmarkEngineAck shows it pays
// against encoding/json.
func engineAck(raw json.RawMessage) (ackFields, bool) {
	p := jsonwire.NewLayout(raw)
	var a ackFields
	p.Literal(`{"observedAtMs":`)
	a.observed = json.Number(p.Digits(16))
	p.Literal(`,"owner":{"hostId":`)
	a.host = p.Text()
	p.Literal(`,"pid":`)
	a.pid = json.Number(p.Digits(16))
	p.Literal(`,"nonce":`)
	a.nonce = p.Text()
	p.Literal(`}}`)
	return a, p.Done()
}
