package snapshot

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// FuzzDecode feeds decode rows of arbitrary values: each column NULL, an
// integer, a float, text or a blob as the fuzzer picks. Decoding must never
// panic, and must answer either a run that keeps the run invariants
// (ARCHITECTURE.md, "The contract") or a DECODE_FAILED error naming the run
// and nothing else.
func FuzzDecode(f *testing.F) {
	f.Add(uint64(0), int64(3), int64(1), "pending", `{"flowName":"demo"}`, "p", "")
	f.Add(uint64(0xffff), int64(3), int64(0), "running", `{"flowName":"demo"}`, "host", `{"observedAtMs":1,"owner":{"hostId":"h","pid":1,"nonce":"n"}}`)
	f.Add(uint64(0x5555555555), int64(9), int64(1), "suspended", `{"flowName":""}`, "lin", "{}")
	// Well-formed: a pending run, and a suspended one waiting with a
	// token and a request.
	f.Add(uint64(1<<63|1<<8), int64(3), int64(1), "pending", `{"flowName":"demo"}`, "p", "")
	f.Add(uint64(1<<63|1<<8|2<<44|2<<48|2<<50), int64(3), int64(1), "suspended", `{"flowName":"demo"}`, "approval", `{"form":1}`)
	f.Fuzz(func(t *testing.T, shape uint64, n, small int64, text, state, ident, js string) {
		pick := func(slot int) any {
			switch (shape >> (2 * slot)) & 3 {
			case 0:
				return nil
			case 1:
				if slot%3 == 0 {
					return small
				}
				return n
			case 2:
				switch slot % 4 {
				case 0:
					return text
				case 1:
					return state
				case 2:
					return ident
				}
				return js
			}
			if slot%5 == 0 {
				return []byte(ident)
			}
			return float64(n) / 2
		}
		w := rawRun{id: "run-1"}
		cols := []*any{&w.revision, &w.deleted, &w.runID, &w.status,
			&w.createdAt, &w.startedAt, &w.finishedAt,
			&w.ownerHost, &w.ownerPid, &w.ownerNonce, &w.heartbeat,
			&w.claimHost, &w.claimPid, &w.claimNonce, &w.claimedAt,
			&w.state, &w.parentRunID, &w.executionParentID, &w.lineage, &w.ordinal,
			&w.cancelRequested, &w.cancelAck,
			&w.waitingReason, &w.waitingWake, &w.waitingToken, &w.waitingRequest,
			&w.edgeParent}
		for i, c := range cols {
			*c = pick(i)
		}
		if _, ok := w.waitingToken.(string); ok {
			// A token no other column holds, to look for it.
			w.waitingToken = fuzzToken
		}
		if shape>>63 == 1 {
			// Mostly well-formed rows, so that the checks past the first
			// column are reached.
			w.runID, w.status, w.state, w.revision, w.deleted = "run-1", text, state, small, int64(0)
		}
		snap, err := w.decode(Position{Source: strings.Repeat("a", 32), Revision: 5})
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.DecodeFailed || fe.RunID != "run-1" || snap != nil {
				t.Fatalf("decode failed with %#v and returned %#v", err, snap)
			}
			return
		}
		switch s := snap.(type) {
		case *Missing:
			if w.runID != nil || s.ID != "run-1" || s.Deleted != (s.DeletedAtRevision != nil) {
				t.Fatalf("missing %+v from a row %+v", s, w)
			}
		case *Run:
			checkRun(t, s, &w)
		default:
			t.Fatalf("decode returned %#v", snap)
		}
	})
}

const fuzzToken = "TOKEN-7d1f0c93"

// checkRun fails unless run keeps the run invariants
// (ARCHITECTURE.md) at revision 5.
func checkRun(t *testing.T, run *Run, w *rawRun) {
	t.Helper()
	switch {
	case run.ID != "run-1" || run.Revision < 1 || run.Revision > 5 || !run.Status.Valid():
		t.Fatalf("run %+v", run)
	case (run.Status == vocab.StatusRunning) != (run.Owner != nil):
		t.Fatalf("status %s with owner %+v", run.Status, run.Owner)
	case run.ExecutionParentID != nil && *run.ExecutionParentID == run.ID:
		t.Fatalf("its own parent")
	case run.ParentRunID != nil && (run.ExecutionParentID == nil || *run.ParentRunID != *run.ExecutionParentID):
		t.Fatalf("parent %v, execution parent %v", run.ParentRunID, run.ExecutionParentID)
	case (w.lineage == nil) != (w.ordinal == nil):
		t.Fatalf("a half-set lineage decoded")
	case w.lineage == nil && (run.LineageID != run.ID || run.RoundOrdinal != 0):
		t.Fatalf("lineage %q ordinal %d of round 0", run.LineageID, run.RoundOrdinal)
	case run.Waiting == nil && (w.waitingWake != nil || w.waitingToken != nil || w.waitingRequest != nil):
		t.Fatalf("waiting details without a reason decoded")
	case run.Cancellation.Acknowledgement != nil && run.Cancellation.RequestedAt == nil:
		t.Fatalf("an acknowledgement without a request decoded")
	case !json.Valid(run.State) || run.FlowName == "":
		t.Fatalf("state %q, flowName %q", run.State, run.FlowName)
	}
	if run.Waiting != nil && run.Waiting.Request != nil && !json.Valid(run.Waiting.Request) {
		t.Fatalf("waiting request %q", run.Waiting.Request)
	}
	if w.waitingToken == fuzzToken {
		for _, c := range []any{w.status, w.state, w.waitingReason, w.waitingRequest, w.cancelAck} {
			if s, ok := c.(string); ok && strings.Contains(s, fuzzToken) {
				return
			}
		}
		if b, _ := json.Marshal(run); strings.Contains(string(b), fuzzToken) {
			t.Fatalf("the token appears in the run")
		}
	}
}
