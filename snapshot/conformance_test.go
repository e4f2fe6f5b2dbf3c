package snapshot_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/cursor"
	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/snapshot"
	"github.com/flowsnap/flowsnap/snapshot/snapshottest"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// TestReadPath runs the conformance suite of the read path against every
// dialect.
func TestReadPath(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		exercise(t, d)
	})
}

// exercise is the conformance suite of the read path (ARCHITECTURE.md, "The contract"): what every
// dialect must answer alike. Each group has a store of its own; the
// subtests of a group run in order on it.
func exercise(t *testing.T, d store.Dialect) {
	for _, g := range []struct {
		name string
		fn   func(t *testing.T, d store.Dialect)
	}{
		{"Position", exercisePosition},
		{"Batches", exerciseBatches},
		{"Ids", exerciseIDs},
		{"DerivedFields", exerciseDerivedFields},
		{"Parents", exerciseParents},
		{"Children", exerciseChildren},
		{"Rounds", exerciseRounds},
		{"PageSizes", exercisePageSizes},
		{"Cursors", exerciseCursors},
		{"BrokenRows", exerciseBrokenRows},
		{"Errors", exerciseErrors},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, d)
		})
	}
}

func exercisePosition(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	ctx := context.Background()
	f.create(t, engine.NewRun{ID: "a", FlowName: "demo"})

	t.Run("a read is at the store's source and revision", func(t *testing.T) {
		pos, err := f.r.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := f.storePosition(t); pos != want {
			t.Fatalf("position %+v, want %+v", pos, want)
		}
		if len(pos.Source) != 32 || strings.Trim(pos.Source, "0123456789abcdef") != "" {
			t.Fatalf("source %q is not 32 lowercase hex characters", pos.Source)
		}
	})

	t.Run("an empty batch still reads the position", func(t *testing.T) {
		rctx, rd := f.r.Begin(ctx)
		defer rd.End()
		res, err := f.r.Runs(rctx, nil)
		if err != nil || len(res) != 0 {
			t.Fatalf("Runs(nil) = %v, %v", res, err)
		}
		pos, ok := rd.Position()
		if !ok || pos != f.storePosition(t) {
			t.Fatalf("position %+v (read: %v), want %+v", pos, ok, f.storePosition(t))
		}
		if n := rd.Statements(); n != 1 {
			t.Fatalf("an empty batch ran %d statements, want 1 (the position)", n)
		}
	})

	t.Run("an operation that reads nothing opens no transaction", func(t *testing.T) {
		_, rd := f.r.Begin(ctx)
		rd.End()
		rd.End() // a second End is harmless
		if _, ok := rd.Position(); ok {
			t.Fatal("a read that read nothing has a position")
		}
		if n := rd.Statements(); n != 0 {
			t.Fatalf("ran %d statements", n)
		}
	})

	t.Run("a read after the operation ended is refused", func(t *testing.T) {
		rctx, rd := f.r.Begin(ctx)
		if _, err := f.r.Run(rctx, "a"); err != nil {
			t.Fatal(err)
		}
		rd.End()
		_, err := f.r.Run(rctx, "a")
		wantCode(t, err, fault.Timeout)
	})

	t.Run("every read of an operation sees the position of its first read", func(t *testing.T) {
		rctx, rd := f.r.Begin(ctx)
		defer rd.End()
		before := mustRun(t, must(f.r.Runs(rctx, []string{"a"}))[0])
		pos, _ := rd.Position()
		f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, "a", worker) })
		f.create(t, engine.NewRun{ID: "child-of-a", FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "a", Seq: 1}}})

		again := mustRun(t, must(f.r.Runs(rctx, []string{"a"}))[0])
		if again.Status != vocab.StatusPending || again.Revision != before.Revision {
			t.Fatalf("the second read of the operation saw %s at revision %d, want pending at %d", again.Status, again.Revision, before.Revision)
		}
		page, err := f.r.Children(rctx, snapshot.PageRequest{Anchor: "a"})
		if err != nil || len(page.Edges) != 0 {
			t.Fatalf("children read later in the operation: %v, %v; want none", page, err)
		}
		if p, err := f.r.Position(rctx); err != nil || p != pos {
			t.Fatalf("position moved within the operation: %+v, want %+v", p, pos)
		}

		after := f.observed(t, "a")
		if after.Status != vocab.StatusRunning || after.Revision <= before.Revision {
			t.Fatalf("a new read saw %s at revision %d, want running after %d", after.Status, after.Revision, before.Revision)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func exerciseBatches(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	ctx := context.Background()
	f.create(t,
		engine.NewRun{ID: "a", FlowName: "demo"},
		engine.NewRun{ID: "b", FlowName: "demo"},
		engine.NewRun{ID: "gone", FlowName: "demo"},
		engine.NewRun{ID: "reborn", FlowName: "demo"},
	)
	f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, "gone") })

	t.Run("a batch answers in request order with duplicates in place", func(t *testing.T) {
		ids := []string{"b", "a", "nobody", "b", "a", "b"}
		res := f.runs(t, ids...)
		for i, id := range ids {
			if res[i].Err != nil || res[i].Value.SnapshotID() != id {
				t.Fatalf("element %d: %#v, want the snapshot of %q", i, res[i], id)
			}
		}
		if res[0].Value != res[3].Value && !reflect.DeepEqual(res[0].Value, res[3].Value) {
			t.Fatal("duplicates answered differently")
		}
	})

	t.Run("a run that never existed is missing and not deleted", func(t *testing.T) {
		m := mustMissing(t, f.runs(t, "nobody")[0])
		if m.ID != "nobody" || m.Deleted || m.DeletedAtRevision != nil {
			t.Fatalf("got %+v", m)
		}
	})

	t.Run("a deleted run is missing with the revision of its tombstone", func(t *testing.T) {
		rev, deleted := f.change(t, "gone")
		if deleted != 1 {
			t.Fatalf("the store has no tombstone for the deleted run")
		}
		m := mustMissing(t, f.runs(t, "gone")[0])
		if !m.Deleted || m.DeletedAtRevision == nil || *m.DeletedAtRevision != rev {
			t.Fatalf("got %+v, want deleted at revision %d", m, rev)
		}
	})

	t.Run("a recreated run is observed at a revision after its tombstone", func(t *testing.T) {
		f.do(t, func(tx *engine.Tx) error { return tx.Delete(ctx, "reborn") })
		tomb, _ := f.change(t, "reborn")
		f.create(t, engine.NewRun{ID: "reborn", FlowName: "demo"})
		if run := f.observed(t, "reborn"); run.Revision <= tomb {
			t.Fatalf("revision %d, want after the tombstone's %d", run.Revision, tomb)
		}
	})

	t.Run("every revision is at most the read's position", func(t *testing.T) {
		rctx, rd := f.r.Begin(ctx)
		defer rd.End()
		res := must(f.r.Runs(rctx, []string{"a", "b", "gone", "reborn"}))
		pos, _ := rd.Position()
		for _, r := range res {
			switch s := r.Value.(type) {
			case *snapshot.Run:
				if s.Revision < 1 || s.Revision > pos.Revision {
					t.Fatalf("run %s at revision %d, position %d", s.ID, s.Revision, pos.Revision)
				}
			case *snapshot.Missing:
				if *s.DeletedAtRevision > pos.Revision {
					t.Fatalf("tombstone of %s at revision %d, position %d", s.ID, *s.DeletedAtRevision, pos.Revision)
				}
			}
		}
	})

	t.Run("a batch of 200 ids is read in one statement", func(t *testing.T) {
		ids := make([]string, snapshot.MaxBatch)
		for i := range ids {
			ids[i] = []string{"a", "b", "gone", fmt.Sprintf("nobody-%d", i)}[i%4]
		}
		rctx, rd := f.r.Begin(ctx)
		defer rd.End()
		res, err := f.r.Runs(rctx, ids)
		if err != nil || len(res) != len(ids) {
			t.Fatalf("Runs(200 ids): %d results, %v", len(res), err)
		}
		for i, r := range res {
			if r.Err != nil || r.Value.SnapshotID() != ids[i] {
				t.Fatalf("element %d: %#v, want %q", i, r, ids[i])
			}
		}
		if n := rd.Statements(); n != 2 {
			t.Fatalf("%d statements, want 2 (the position, the runs)", n)
		}
	})

	t.Run("a batch of 201 ids is refused as bad user input", func(t *testing.T) {
		_, err := f.r.Runs(ctx, make([]string, snapshot.MaxBatch+1))
		wantCode(t, err, fault.BadUserInput)
	})
}

func exerciseIDs(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	f.create(t, engine.NewRun{ID: "ok", FlowName: "demo"})
	for _, c := range []struct {
		name  string
		id    string
		valid bool
	}{
		{"an empty id is refused", "", false},
		{"an id of 1024 ASCII characters is read", strings.Repeat("a", 1024), true},
		{"an id of 1025 ASCII characters is refused", strings.Repeat("a", 1025), false},
		{"an id of 1024 two-byte characters is read", strings.Repeat("é", 1024), true},
		{"an id of 512 astral characters, 1024 UTF-16 units, is read", strings.Repeat("😀", 512), true},
		{"an id of 513 astral characters, 1026 UTF-16 units, is refused", strings.Repeat("😀", 513), false},
		{"an id of 1023 ASCII characters and one astral character is refused", strings.Repeat("a", 1023) + "😀", false},
		{"an id holding NUL is refused", "a\x00b", false},
		{"an id of invalid UTF-8 is refused", "a\xffb", false},
		{"an id holding an encoded surrogate is refused", "a\xed\xa0\x80b", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.valid {
				f.create(t, engine.NewRun{ID: c.id, FlowName: "demo"})
			}
			res := f.runs(t, "ok", c.id, "ok", c.id)
			mustRun(t, res[0])
			mustRun(t, res[2])
			for _, r := range []snapshot.Result[snapshot.Snapshot]{res[1], res[3]} {
				if c.valid {
					if run := mustRun(t, r); run.ID != c.id {
						t.Fatalf("read run %q, want the id unchanged", vocab.Quote(run.ID))
					}
					continue
				}
				wantCode(t, r.Err, fault.BadUserInput)
				if r.Value != nil {
					t.Fatalf("a refused id has a snapshot: %#v", r.Value)
				}
				if msg := fault.MessageOf(r.Err); len(msg) > 200 {
					t.Fatalf("the message quotes too much: %d bytes", len(msg))
				}
			}
			if !c.valid {
				if err := vocab.CheckID("an id", c.id); fault.CodeOf(err) != fault.BadUserInput {
					t.Fatalf("CheckID = %v", err)
				}
			}
		})
	}

	t.Run("a batch of only refused ids still reads the position", func(t *testing.T) {
		rctx, rd := f.r.Begin(context.Background())
		defer rd.End()
		res := must(f.r.Runs(rctx, []string{"", "\x00"}))
		for _, r := range res {
			wantCode(t, r.Err, fault.BadUserInput)
		}
		if _, ok := rd.Position(); !ok || rd.Statements() != 1 {
			t.Fatalf("position read: %v, statements %d", ok, rd.Statements())
		}
	})
}

func exerciseDerivedFields(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	ctx := context.Background()
	f.create(t,
		engine.NewRun{ID: "root", FlowName: "loop"},
		engine.NewRun{ID: "root-1", FlowName: "loop", Round: &engine.Round{LineageID: "root", Ordinal: 1, Previous: "root"}},
		engine.NewRun{ID: "root-2", FlowName: "loop", Round: &engine.Round{LineageID: "root", Ordinal: 2, Previous: "root-1"}},
	)

	t.Run("round 0 is its own lineage at ordinal 0", func(t *testing.T) {
		run := f.observed(t, "root")
		if run.LineageID != "root" || run.RoundOrdinal != 0 {
			t.Fatalf("lineage %q ordinal %d", run.LineageID, run.RoundOrdinal)
		}
	})

	t.Run("a later round names its lineage and ordinal", func(t *testing.T) {
		run := f.observed(t, "root-2")
		if run.LineageID != "root" || run.RoundOrdinal != 2 {
			t.Fatalf("lineage %q ordinal %d", run.LineageID, run.RoundOrdinal)
		}
	})

	for i, c := range []struct {
		reason string
		kind   vocab.WaitingKind
	}{
		{"timer", vocab.WaitingTimer},
		{"approval", vocab.WaitingApproval},
		{"quota", vocab.WaitingQuota},
		{"human", vocab.WaitingHuman},
		{"event", vocab.WaitingSignal},
		{"signal", vocab.WaitingSignal},
		{"webhook", vocab.WaitingOther},
		{"timers", vocab.WaitingOther},
	} {
		t.Run(fmt.Sprintf("a run waiting for %q waits for kind %s", c.reason, c.kind), func(t *testing.T) {
			id := fmt.Sprintf("waiting-%d", i)
			f.create(t, engine.NewRun{ID: id, FlowName: "demo"})
			f.do(t, func(tx *engine.Tx) error {
				if err := tx.Start(ctx, id, worker); err != nil {
					return err
				}
				return tx.Wait(ctx, id, engine.Waiting{Reason: c.reason})
			})
			run := f.observed(t, id)
			if run.Waiting == nil || run.Waiting.Kind != c.kind || run.Waiting.Reason != c.reason {
				t.Fatalf("waiting %+v, want kind %s for %q", run.Waiting, c.kind, c.reason)
			}
			if run.Waiting.TokenDigest != nil || run.Waiting.WakeAt != nil || run.Waiting.Request != nil {
				t.Fatalf("waiting details that were never written: %+v", run.Waiting)
			}
		})
	}

	t.Run("the token is read only as the SHA-256 of its bytes and appears nowhere", func(t *testing.T) {
		token := "tok-Sécret-🔑-" + hex.EncodeToString([]byte(t.Name()))[:16]
		f.create(t, engine.NewRun{ID: "secret", FlowName: "demo"})
		f.do(t, func(tx *engine.Tx) error {
			if err := tx.Start(ctx, "secret", worker); err != nil {
				return err
			}
			return tx.Wait(ctx, "secret", engine.Waiting{Reason: "approval", WakeAt: 1234, Token: token, Request: json.RawMessage(`{"form":"expense"}`)})
		})
		run := f.observed(t, "secret")
		sum := sha256.Sum256([]byte(token))
		w := run.Waiting
		if w == nil || w.TokenDigest == nil || *w.TokenDigest != hex.EncodeToString(sum[:]) {
			t.Fatalf("waiting %+v, want the token's digest", w)
		}
		if w.WakeAt == nil || *w.WakeAt != 1234 || string(w.Request) != `{"form":"expense"}` || w.Kind != vocab.WaitingApproval {
			t.Fatalf("waiting %+v", w)
		}
		if where := findSecret(run, token); where != "" {
			t.Fatalf("the token appears in %s", where)
		}
	})

	t.Run("a run that waits for nothing has no waiting", func(t *testing.T) {
		if run := f.observed(t, "root"); run.Waiting != nil {
			t.Fatalf("waiting %+v", run.Waiting)
		}
	})

	t.Run("a running run has its owner, claim and cancellation", func(t *testing.T) {
		claimant := vocab.Owner{HostID: "host-2", PID: 77, Nonce: "nonce-2"}
		f.create(t, engine.NewRun{ID: "busy", FlowName: "demo", CreatedAt: 1000})
		f.do(t, func(tx *engine.Tx) error {
			return errorsJoin(tx.Start(ctx, "busy", worker), tx.Claim(ctx, "busy", claimant),
				tx.RequestCancel(ctx, "busy"), tx.AcknowledgeCancel(ctx, "busy", worker))
		})
		run := f.observed(t, "busy")
		want := vocab.Owner{HostID: worker.HostID, PID: worker.PID, Nonce: worker.Nonce}
		switch {
		case run.Status != vocab.StatusRunning, run.CreatedAt != 1000, run.StartedAt == nil, run.FinishedAt != nil:
			t.Fatalf("run %+v", run)
		case run.Owner == nil || *run.Owner != want || run.HeartbeatAt == nil:
			t.Fatalf("owner %+v, heartbeat %v", run.Owner, run.HeartbeatAt)
		case run.Claim == nil || run.Claim.Owner != (vocab.Owner{HostID: "host-2", PID: 77, Nonce: "nonce-2"}):
			t.Fatalf("claim %+v", run.Claim)
		case run.Cancellation.RequestedAt == nil || run.Cancellation.Acknowledgement == nil || run.Cancellation.Acknowledgement.Owner != want:
			t.Fatalf("cancellation %+v", run.Cancellation)
		}
	})

	t.Run("a run's state is passed through as the store holds it", func(t *testing.T) {
		f.create(t, engine.NewRun{ID: "stateful", FlowName: "étude", State: json.RawMessage(`{"input":{"n":[1,2.5,null,"ü"]}}`)})
		run := f.observed(t, "stateful")
		var stored string
		tx, err := f.db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := tx.QueryRow(ctx, `SELECT state_json FROM flows_runs WHERE run_id = 'stateful'`).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if string(run.State) != stored || run.FlowName != "étude" {
			t.Fatalf("state %s flowName %q, want %s", run.State, run.FlowName, stored)
		}
	})

	t.Run("a state or request a response would rewrite is kept as it writes them", func(t *testing.T) {
		state := json.RawMessage("{ \"flowName\" : \"rewritten\",\n  \"note\": \"<b>&amp;</b> \u2028\" }")
		f.create(t, engine.NewRun{ID: "spaced", FlowName: "rewritten", State: state})
		f.do(t, func(tx *engine.Tx) error {
			if err := tx.Start(ctx, "spaced", worker); err != nil {
				return err
			}
			return tx.Wait(ctx, "spaced", engine.Waiting{Reason: "approval", Request: json.RawMessage(` [ "<x>" , {"y" : null} ] `)})
		})
		run := f.observed(t, "spaced")
		if want := `{"flowName":"rewritten","note":"\u003cb\u003e\u0026amp;\u003c/b\u003e \u2028"}`; string(run.State) != want || run.FlowName != "rewritten" {
			t.Fatalf("state %s flowName %q, want %s", run.State, run.FlowName, want)
		}
		if want := `["\u003cx\u003e",{"y":null}]`; run.Waiting == nil || string(run.Waiting.Request) != want {
			t.Fatalf("waiting %+v, want the request %s", run.Waiting, want)
		}
	})
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// findSecret returns where secret appears in v, looking at every string and
// byte slice v reaches and at v printed with %#v, %+v and as JSON, or "".
func findSecret(v any, secret string) string {
	if b, err := json.Marshal(v); err != nil || strings.Contains(string(b), secret) {
		return "its JSON"
	}
	var where string
	var visit func(path string, rv reflect.Value)
	visit = func(path string, rv reflect.Value) {
		if where != "" || !rv.IsValid() {
			return
		}
		switch rv.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !rv.IsNil() {
				for _, format := range []string{"%#v", "%+v", "%v"} {
					if strings.Contains(fmt.Sprintf(format, rv.Interface()), secret) {
						where = path + " printed with " + format
						return
					}
				}
				visit(path, rv.Elem())
			}
		case reflect.Struct:
			for i := range rv.NumField() {
				visit(path+"."+rv.Type().Field(i).Name, rv.Field(i))
			}
		case reflect.Slice, reflect.Array:
			if rv.Type().Elem().Kind() == reflect.Uint8 {
				if strings.Contains(string(rv.Bytes()), secret) {
					where = path
				}
				return
			}
			for i := range rv.Len() {
				visit(fmt.Sprintf("%s[%d]", path, i), rv.Index(i))
			}
		case reflect.String:
			if strings.Contains(rv.String(), secret) {
				where = path
			}
		}
	}
	visit("value", reflect.ValueOf(v))
	return where
}

func exerciseParents(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	ctx := context.Background()
	f.create(t,
		engine.NewRun{ID: "p", FlowName: "demo"},
		engine.NewRun{ID: "q", FlowName: "demo"},
		engine.NewRun{ID: "r", FlowName: "demo"},
		engine.NewRun{ID: "s", FlowName: "demo"},
		engine.NewRun{ID: "child", FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "p", Seq: 3}}},
		engine.NewRun{ID: "join-by-seq", FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "p", Seq: 9}, {ParentID: "q", Seq: 1}}},
		engine.NewRun{ID: "join-by-id", FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "q", Seq: 5}, {ParentID: "p", Seq: 5}, {ParentID: "r", Seq: 9}}},
		engine.NewRun{ID: "round-1", FlowName: "demo", Round: &engine.Round{LineageID: "r", Ordinal: 1, Previous: "r"}},
	)
	for _, c := range []struct {
		name, id      string
		parentRunID   *string
		executionFrom string
	}{
		{"a child's parent is its parent_run_id", "child", ptr("p"), "p"},
		{"a join's parent is its earliest spawn edge by seq", "join-by-seq", nil, "q"},
		{"a join's parent breaks a tie of seq by parent id", "join-by-id", nil, "p"},
		{"a round's parent is the round it continues", "round-1", ptr("r"), "r"},
		{"a run that was never spawned has no parent", "p", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := f.observed(t, c.id)
			if !reflect.DeepEqual(run.ParentRunID, c.parentRunID) {
				t.Fatalf("parentRunId %v, want %v", deref(run.ParentRunID), deref(c.parentRunID))
			}
			if deref(run.ExecutionParentID) != c.executionFrom {
				t.Fatalf("effective parent %q, want %q", deref(run.ExecutionParentID), c.executionFrom)
			}
		})
	}

	t.Run("a join's parent follows an earlier spawn edge added later", func(t *testing.T) {
		before := f.observed(t, "join-by-id")
		f.do(t, func(tx *engine.Tx) error { return tx.AddChild(ctx, "s", "join-by-id", 0) })
		run := f.observed(t, "join-by-id")
		if deref(run.ExecutionParentID) != "s" || run.Revision <= before.Revision {
			t.Fatalf("effective parent %q at revision %d, want s after %d", deref(run.ExecutionParentID), run.Revision, before.Revision)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func exerciseChildren(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	ctx := context.Background()
	runs := []engine.NewRun{
		{ID: "parent", FlowName: "fan-out"},
		{ID: "small", FlowName: "fan-out"},
		{ID: "childless", FlowName: "fan-out"},
	}
	type key struct {
		seq int64
		id  string
	}
	var want []key
	for i := range 150 {
		k := key{int64(i*37) % 50, fmt.Sprintf("kid-%03d", 149-i)}
		want = append(want, k)
		runs = append(runs, engine.NewRun{ID: k.id, FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: k.seq}}})
	}
	for i := range 10 {
		runs = append(runs, engine.NewRun{ID: fmt.Sprintf("small-%d", i), FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "small", Seq: int64(i)}}})
	}
	f.create(t, runs...)
	slices.SortFunc(want, func(a, b key) int {
		if a.seq != b.seq {
			return int(a.seq - b.seq)
		}
		return strings.Compare(a.id, b.id)
	})
	wantIDs := make([]string, len(want))
	for i, k := range want {
		wantIDs[i] = k.id
	}

	t.Run("children are ordered by seq, then child id, with the seq as ordinal", func(t *testing.T) {
		p := f.children(t, "parent", 200, nil)
		if got := edgeIDs(p.Edges); !slices.Equal(got, wantIDs) {
			t.Fatalf("children %v, want %v", got, wantIDs)
		}
		for i, e := range p.Edges {
			if e.Ordinal != want[i].seq {
				t.Fatalf("edge %d has ordinal %d, want its seq %d", i, e.Ordinal, want[i].seq)
			}
			if run := mustRun(t, e.Node); run.ID != e.RunID || deref(run.ExecutionParentID) != "parent" {
				t.Fatalf("edge %d holds %+v", i, run)
			}
		}
		if p.PageInfo.HasNextPage || p.PageInfo.EndCursor == nil || *p.PageInfo.EndCursor != p.Edges[149].Cursor || p.Anchor != "parent" {
			t.Fatalf("page info %+v", p.PageInfo)
		}
	})

	t.Run("a page holds 100 children by default", func(t *testing.T) {
		p := f.children(t, "parent", 0, nil)
		if len(p.Edges) != snapshot.DefaultPageSize || !p.PageInfo.HasNextPage {
			t.Fatalf("%d edges, hasNextPage %v", len(p.Edges), p.PageInfo.HasNextPage)
		}
	})

	for _, first := range []int{1, 7, 50, 149, 150, 200} {
		t.Run(fmt.Sprintf("paging by %d to the end gives every child exactly once", first), func(t *testing.T) {
			all := walk(t, first, func(after *string) *snapshot.Page { return f.children(t, "parent", first, after) })
			if got := edgeIDs(all); !slices.Equal(got, wantIDs) {
				t.Fatalf("children %v, want %v", got, wantIDs)
			}
		})
	}

	t.Run("a page that ends the list exactly has no next page", func(t *testing.T) {
		if p := f.children(t, "small", 10, nil); len(p.Edges) != 10 || p.PageInfo.HasNextPage {
			t.Fatalf("%d edges, hasNextPage %v", len(p.Edges), p.PageInfo.HasNextPage)
		}
		p := f.children(t, "small", 5, nil)
		if len(p.Edges) != 5 || !p.PageInfo.HasNextPage {
			t.Fatalf("%d edges, hasNextPage %v", len(p.Edges), p.PageInfo.HasNextPage)
		}
		p = f.children(t, "small", 5, p.PageInfo.EndCursor)
		if len(p.Edges) != 5 || p.PageInfo.HasNextPage || p.Edges[4].RunID != "small-9" {
			t.Fatalf("%v, hasNextPage %v", edgeIDs(p.Edges), p.PageInfo.HasNextPage)
		}
		p = f.children(t, "small", 5, p.PageInfo.EndCursor)
		if len(p.Edges) != 0 || p.PageInfo.HasNextPage || p.PageInfo.EndCursor != nil {
			t.Fatalf("past the end: %v, %+v", edgeIDs(p.Edges), p.PageInfo)
		}
	})

	t.Run("a run without children has an empty page without an end cursor", func(t *testing.T) {
		for _, anchor := range []string{"childless", "nobody"} {
			p := f.children(t, anchor, 0, nil)
			if len(p.Edges) != 0 || p.PageInfo.HasNextPage || p.PageInfo.EndCursor != nil {
				t.Fatalf("children of %s: %v, %+v", anchor, edgeIDs(p.Edges), p.PageInfo)
			}
		}
	})

	t.Run("a batch of pages answers each request in order in three statements", func(t *testing.T) {
		rctx, rd := f.r.Begin(ctx)
		defer rd.End()
		res, err := f.r.Pages(rctx, cursor.Children, []snapshot.PageRequest{
			{Anchor: "parent", First: ptr(5)},
			{Anchor: "small", First: ptr(3)},
			{Anchor: "parent", First: ptr(0)},
			{Anchor: "childless"},
			{Anchor: "small", First: ptr(200)},
		})
		if err != nil || len(res) != 5 {
			t.Fatalf("Pages: %d results, %v", len(res), err)
		}
		wantCode(t, res[2].Err, fault.BadUserInput)
		for i, n := range map[int]int{0: 5, 1: 3, 3: 0, 4: 10} {
			if res[i].Err != nil || len(res[i].Value.Edges) != n {
				t.Fatalf("page %d: %v, want %d edges", i, res[i].Err, n)
			}
		}
		if got := edgeIDs(res[0].Value.Edges); !slices.Equal(got, wantIDs[:5]) {
			t.Fatalf("page 0: %v", got)
		}
		if n := rd.Statements(); n != 2 {
			t.Fatalf("%d statements, want 2 (the position, the edges with their runs)", n)
		}
	})
}

func exerciseRounds(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	runs := []engine.NewRun{{ID: "lin", FlowName: "loop"}, {ID: "solo", FlowName: "loop"}}
	wantIDs := []string{"lin"}
	prev := "lin"
	for k := int64(1); k <= 30; k++ {
		// Ids that sort against the ordinals.
		id := fmt.Sprintf("lin-%02d", 30-k)
		runs = append(runs, engine.NewRun{ID: id, FlowName: "loop", Round: &engine.Round{LineageID: "lin", Ordinal: k, Previous: prev}})
		wantIDs = append(wantIDs, id)
		prev = id
	}
	f.create(t, runs...)

	t.Run("rounds cover the whole lineage from round 0 in ordinal order, from any of its runs", func(t *testing.T) {
		for _, anchor := range []string{"lin", "lin-15", "lin-00"} {
			p := f.rounds(t, anchor, "lin", 200, nil)
			if got := edgeIDs(p.Edges); !slices.Equal(got, wantIDs) {
				t.Fatalf("rounds of %s: %v, want %v", anchor, got, wantIDs)
			}
			for i, e := range p.Edges {
				run := mustRun(t, e.Node)
				if e.Ordinal != int64(i) || run.RoundOrdinal != int64(i) || run.LineageID != "lin" {
					t.Fatalf("edge %d: ordinal %d, run %+v", i, e.Ordinal, run)
				}
			}
			if p.PageInfo.HasNextPage || p.Anchor != anchor {
				t.Fatalf("page info %+v, anchor %q", p.PageInfo, p.Anchor)
			}
		}
	})

	t.Run("a run that never continued has one round, itself", func(t *testing.T) {
		p := f.rounds(t, "solo", "solo", 0, nil)
		if got := edgeIDs(p.Edges); !slices.Equal(got, []string{"solo"}) || p.Edges[0].Ordinal != 0 || p.PageInfo.HasNextPage {
			t.Fatalf("rounds %v, %+v", got, p.PageInfo)
		}
	})

	for _, first := range []int{1, 4, 30, 31, 200} {
		t.Run(fmt.Sprintf("paging rounds by %d to the end gives every round exactly once", first), func(t *testing.T) {
			all := walk(t, first, func(after *string) *snapshot.Page { return f.rounds(t, "lin-07", "lin", first, after) })
			if got := edgeIDs(all); !slices.Equal(got, wantIDs) {
				t.Fatalf("rounds %v, want %v", got, wantIDs)
			}
		})
	}
}

func exercisePageSizes(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	ctx := context.Background()
	f.create(t, engine.NewRun{ID: "p", FlowName: "demo"})
	for _, first := range []int{0, -1, 201, 1000, math.MinInt, math.MaxInt} {
		t.Run(fmt.Sprintf("a page size of %d is bad user input", first), func(t *testing.T) {
			_, err := f.r.Children(ctx, snapshot.PageRequest{Anchor: "p", First: ptr(first)})
			wantCode(t, err, fault.BadUserInput)
			_, err = f.r.Rounds(ctx, snapshot.PageRequest{Anchor: "p", Lineage: "p", First: ptr(first)})
			wantCode(t, err, fault.BadUserInput)
		})
	}
	for _, first := range []int{1, 100, 200} {
		t.Run(fmt.Sprintf("a page size of %d is allowed", first), func(t *testing.T) {
			if _, err := f.r.Children(ctx, snapshot.PageRequest{Anchor: "p", First: ptr(first)}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.r.Rounds(ctx, snapshot.PageRequest{Anchor: "p", Lineage: "p", First: ptr(first)}); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("an invalid anchor is bad user input", func(t *testing.T) {
		_, err := f.r.Children(ctx, snapshot.PageRequest{Anchor: ""})
		wantCode(t, err, fault.BadUserInput)
	})
}

func exerciseCursors(t *testing.T, d store.Dialect) {
	f, other := newFixture(t, d), newFixture(t, d)
	ctx := context.Background()
	family := func(f *fixture) {
		runs := []engine.NewRun{{ID: "parent", FlowName: "demo"}, {ID: "parent-2", FlowName: "demo"}}
		for i := range 10 {
			runs = append(runs,
				engine.NewRun{ID: fmt.Sprintf("c%d", i), FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: int64(10 * i)}}},
				engine.NewRun{ID: fmt.Sprintf("d%d", i), FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent-2", Seq: int64(i)}}})
		}
		f.create(t, runs...)
	}
	family(f)
	family(other)
	first := f.children(t, "parent", 3, nil)
	end := *first.PageInfo.EndCursor
	fromOther := *other.children(t, "parent", 3, nil).PageInfo.EndCursor
	roundsEnd := f.rounds(t, "parent", "parent", 1, nil).Edges[0].Cursor
	raw, err := base64.RawURLEncoding.DecodeString(end)
	if err != nil {
		t.Fatal(err)
	}
	raw[0] = 7
	version7 := base64.RawURLEncoding.EncodeToString(raw)

	for _, c := range []struct {
		name    string
		kind    cursor.Kind
		anchor  string
		after   string
		mention string
	}{
		{"an empty cursor is a bad cursor", cursor.Children, "parent", "", ""},
		{"a cursor outside the base64url alphabet is a bad cursor", cursor.Children, "parent", "!!!!", ""},
		{"a padded cursor is a bad cursor", cursor.Children, "parent", end + "=", ""},
		{"a truncated cursor is a bad cursor", cursor.Children, "parent", end[:len(end)-4], ""},
		{"a cursor of an unknown version is a bad cursor", cursor.Children, "parent", version7, "version"},
		{"a cursor longer than 32768 characters is a bad cursor", cursor.Children, "parent", strings.Repeat("A", cursor.MaxLength+1), ""},
		{"a cursor of another store is a bad cursor", cursor.Children, "parent", fromOther, "store"},
		{"a cursor of another run is a bad cursor", cursor.Children, "parent-2", end, "run"},
		{"a children cursor is a bad cursor for rounds", cursor.Rounds, "parent", end, "children"},
		{"a rounds cursor is a bad cursor for children", cursor.Children, "parent", roundsEnd, "rounds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := f.r.Pages(ctx, c.kind, []snapshot.PageRequest{
				{Anchor: "parent", Lineage: "parent", First: ptr(2)},
				{Anchor: c.anchor, Lineage: c.anchor, After: ptr(c.after)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Err != nil || len(res[0].Value.Edges) == 0 {
				t.Fatalf("the good page of the batch failed: %v", res[0].Err)
			}
			fe := wantCode(t, res[1].Err, fault.BadCursor)
			if res[1].Value != nil {
				t.Fatalf("a bad cursor has a page")
			}
			if !strings.Contains(fe.Message, c.mention) {
				t.Fatalf("message %q does not say it is about the %s", fe.Message, c.mention)
			}
			if len(fe.Message) > 400 {
				t.Fatalf("message of %d bytes", len(fe.Message))
			}
		})
	}

	t.Run("children and rounds read in one batch answer as read apart, in two statements", func(t *testing.T) {
		rounds := f.rounds(t, "parent", "parent", 0, nil)
		second := f.children(t, "parent", 0, &end)
		rctx, rd := f.r.Begin(ctx)
		defer rd.End()
		res, err := f.r.RunPages(rctx, []snapshot.RunPageRequest{
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "parent", First: ptr(3)}},
			{Kind: cursor.Rounds, PageRequest: snapshot.PageRequest{Anchor: "parent", Lineage: "parent"}},
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "parent", After: &roundsEnd}},
			{Kind: cursor.Children, PageRequest: snapshot.PageRequest{Anchor: "parent", After: &end}},
		})
		if err != nil || len(res) != 4 {
			t.Fatalf("RunPages: %d results, %v", len(res), err)
		}
		wantCode(t, res[2].Err, fault.BadCursor)
		for i, want := range map[int]*snapshot.Page{0: first, 1: rounds, 3: second} {
			got := res[i].Value
			if res[i].Err != nil || got == nil {
				t.Fatalf("page %d: %v", i, res[i].Err)
			}
			if !slices.Equal(edgeIDs(got.Edges), edgeIDs(want.Edges)) || *got.PageInfo.EndCursor != *want.PageInfo.EndCursor ||
				got.PageInfo.HasNextPage != want.PageInfo.HasNextPage {
				t.Fatalf("page %d: %v %+v, read apart %v %+v", i, edgeIDs(got.Edges), got.PageInfo, edgeIDs(want.Edges), want.PageInfo)
			}
		}
		if n := rd.Statements(); n != 2 {
			t.Fatalf("%d statements, want 2 (the position, the pages of both kinds with their runs)", n)
		}
		if _, err := f.r.RunPages(rctx, []snapshot.RunPageRequest{{Kind: cursor.Steps, PageRequest: snapshot.PageRequest{Anchor: "parent"}}}); err == nil {
			t.Fatal("RunPages read steps as runs")
		}
	})

	t.Run("a cursor stays valid after more writes", func(t *testing.T) {
		// The page ended at c2 (seq 20). Add children before and after it,
		// change and delete runs, c2 itself included.
		f.create(t,
			engine.NewRun{ID: "late-05", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: 5}}},
			engine.NewRun{ID: "late-20", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: 20}}},
			engine.NewRun{ID: "c2a", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: 20}}},
			engine.NewRun{ID: "late-95", FlowName: "leaf", Parents: []engine.ParentEdge{{ParentID: "parent", Seq: 95}}},
		)
		f.do(t, func(tx *engine.Tx) error {
			return errorsJoin(tx.Start(ctx, "c3", worker), tx.Delete(ctx, "c2"), tx.Delete(ctx, "c6"))
		})
		p := f.children(t, "parent", 100, &end)
		want := []string{"c2a", "late-20", "c3", "c4", "c5", "c7", "c8", "c9", "late-95"}
		if got := edgeIDs(p.Edges); !slices.Equal(got, want) {
			t.Fatalf("after the cursor: %v, want %v", got, want)
		}
	})
}

// brokenRow is a run written to break one of the run invariants (ARCHITECTURE.md).
type brokenRow struct {
	name       string
	invariant  int
	sqliteOnly bool
	// says is what the error's message must mention.
	says string
	// setup writes the run id through the engine, then breaks it.
	setup func(t *testing.T, f *fixture, l *snapshottest.Loose, id string)
}

// token is a waiting token no error may carry.
const token = "tok-7f3e-broken-rows-secret"

func exerciseBrokenRows(t *testing.T, d store.Dialect) {
	f := newFixture(t, d)
	l := snapshottest.Loosen(t, f.db)
	ctx := context.Background()
	f.create(t,
		engine.NewRun{ID: "good-1", FlowName: "demo"},
		engine.NewRun{ID: "good-2", FlowName: "demo"},
	)
	pending := func(id string) { f.create(t, engine.NewRun{ID: id, FlowName: "demo"}) }
	running := func(id string) {
		pending(id)
		f.do(t, func(tx *engine.Tx) error { return tx.Start(ctx, id, worker) })
	}
	waiting := func(id string) {
		running(id)
		f.do(t, func(tx *engine.Tx) error {
			return tx.Wait(ctx, id, engine.Waiting{Reason: "approval", Token: token, WakeAt: 99, Request: json.RawMessage(`{"a":1}`)})
		})
	}
	update := func(set string) func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
		return func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_runs SET `+set+` WHERE run_id = $1`, id)
		}
	}
	cases := []brokenRow{
		{"a running run without its owner nonce", 1, false, "owner fields are not all set", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			running(id)
			l.Exec(t, `UPDATE flows_runs SET owner_nonce = NULL WHERE run_id = $1`, id)
		}},
		{"a pending run with an owner", 1, false, "has owner fields set", update(`owner_host_id = 'h', owner_pid = 1, owner_nonce = 'n', heartbeat_at_ms = 1`)},
		{"a revision after the read's position", 2, false, "outside 1..", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_run_changes SET revision = 9007199254740000 WHERE run_id = $1`, id)
		}},
		{"a revision of 0", 2, false, "revision 0 is outside", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_run_changes SET revision = 0 WHERE run_id = $1`, id)
		}},
		{"a live run whose change row is a tombstone", 2, false, "tombstone", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_run_changes SET deleted = 1 WHERE run_id = $1`, id)
		}},
		{"a live run without a change row", 2, false, "no change row", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `DELETE FROM flows_run_changes WHERE run_id = $1`, id)
		}},
		{"an execution parent that is not its parent_run_id", 3, false, "execution_parent_id does not match", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			f.create(t, engine.NewRun{ID: id, FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "good-1", Seq: 0}}})
			l.Exec(t, `UPDATE flows_runs SET execution_parent_id = 'good-2' WHERE run_id = $1`, id)
		}},
		{"an execution parent that is not the earliest spawn edge", 3, false, "execution_parent_id does not match", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			f.create(t, engine.NewRun{ID: id, FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "good-1", Seq: 1}, {ParentID: "good-2", Seq: 2}}})
			l.Exec(t, `UPDATE flows_runs SET execution_parent_id = 'good-2' WHERE run_id = $1`, id)
		}},
		{"a join without an execution parent", 3, false, "execution_parent_id does not match", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			f.create(t, engine.NewRun{ID: id, FlowName: "demo", Parents: []engine.ParentEdge{{ParentID: "good-1", Seq: 1}, {ParentID: "good-2", Seq: 2}}})
			l.Exec(t, `UPDATE flows_runs SET execution_parent_id = NULL WHERE run_id = $1`, id)
		}},
		{"an execution parent without parents", 3, false, "execution_parent_id does not match", update(`execution_parent_id = 'good-1'`)},
		{"a run that is its own parent", 3, false, "its own parent", update(`parent_run_id = run_id, execution_parent_id = run_id`)},
		{"a lineage without a round ordinal", 4, false, "lineage_id and round_ordinal", update(`lineage_id = 'good-1'`)},
		{"a round ordinal without a lineage", 4, false, "lineage_id and round_ordinal", update(`round_ordinal = 3`)},
		{"a waiting token without a waiting reason", 5, false, "without a waiting reason", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			waiting(id)
			l.Exec(t, `UPDATE flows_runs SET waiting_reason = NULL, waiting_wake_at_ms = NULL, waiting_request = NULL WHERE run_id = $1`, id)
		}},
		{"a wake time without a waiting reason", 5, false, "without a waiting reason", update(`waiting_wake_at_ms = 5`)},
		{"a waiting request without a waiting reason", 5, false, "without a waiting reason", update(`waiting_request = '{}'`)},
		{"a cancellation acknowledgement without a request", 6, false, "acknowledgement without a request", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			running(id)
			f.do(t, func(tx *engine.Tx) error {
				return errorsJoin(tx.RequestCancel(ctx, id), tx.AcknowledgeCancel(ctx, id, worker))
			})
			l.Exec(t, `UPDATE flows_runs SET cancel_requested_at_ms = NULL WHERE run_id = $1`, id)
		}},
		{"an unknown status", 7, false, "status", update(`status = 'paused'`)},
		{"a status in the wrong case", 7, false, "status", update(`status = 'PENDING'`)},
		{"a state without a flowName", 7, false, "flowName", update(`state_json = '{"input":1}'`)},
		{"a state with an empty flowName", 7, false, "flowName", update(`state_json = '{"flowName":""}'`)},
		{"a state whose flowName is not a string", 7, false, "flowName", update(`state_json = '{"flowName":7}'`)},
		{"a state that is not an object", 7, false, "not a JSON object", update(`state_json = '["flowName"]'`)},
		{"a state that is not JSON", 7, false, "state_json is not valid JSON", update(`state_json = '{"flowName":"demo"'`)},
		{"a negative creation time", 7, false, "created_at_ms", update(`created_at_ms = -1`)},
		{"a creation time after 2^53-1", 7, false, "created_at_ms", update(`created_at_ms = 9007199254740992`)},
		{"an owner pid after 2^53-1", 7, false, "owner_pid", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			running(id)
			l.Exec(t, `UPDATE flows_runs SET owner_pid = 9007199254740992 WHERE run_id = $1`, id)
		}},
		{"an owner nonce of 1026 UTF-16 units", 7, false, "owner_nonce", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			running(id)
			l.Exec(t, `UPDATE flows_runs SET owner_nonce = $2 WHERE run_id = $1`, id, strings.Repeat("😀", 513))
		}},
		{"an empty parent_run_id", 7, false, "parent_run_id", update(`parent_run_id = '', execution_parent_id = ''`)},
		{"a claim only partly set", 7, false, "claim", update(`claim_host_id = 'h'`)},
		{"a cancellation acknowledgement of the wrong shape", 7, false, "cancel_acknowledgement_json", update(`cancel_requested_at_ms = 1, cancel_acknowledgement_json = '{"observedAtMs":"soon"}'`)},
		{"a cancellation acknowledgement that is not JSON", 7, false, "cancel_acknowledgement_json", update(`cancel_requested_at_ms = 1, cancel_acknowledgement_json = '{'`)},
		{"a waiting request that is not JSON", 7, false, "waiting_request", update(`waiting_reason = 'human', waiting_request = '{'`)},
		{"an integer column holding text", 7, true, "created_at_ms", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_runs SET created_at_ms = 'yesterday' WHERE run_id = $1`, id)
		}},
		{"an integer column holding a fraction", 7, true, "started_at_ms", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_runs SET started_at_ms = 1.5 WHERE run_id = $1`, id)
		}},
		{"a text column holding a blob", 7, true, "owner_host_id", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			running(id)
			l.Exec(t, `UPDATE flows_runs SET owner_host_id = X'6869' WHERE run_id = $1`, id)
		}},
		{"a JSON column holding a blob", 7, true, "state_json", func(t *testing.T, f *fixture, l *snapshottest.Loose, id string) {
			pending(id)
			l.Exec(t, `UPDATE flows_runs SET state_json = CAST(state_json AS BLOB) WHERE run_id = $1`, id)
		}},
	}
	if d == store.SQLite {
		l.DropStrict(t)
	}
	tmp := tempDirOf(f)
	for i, c := range cases {
		if c.sqliteOnly && d != store.SQLite {
			continue
		}
		t.Run(fmt.Sprintf("invariant %d: %s fails only its element", c.invariant, c.name), func(t *testing.T) {
			id := fmt.Sprintf("broken-%02d-%s", i, token[:3])
			c.setup(t, f, l, id)
			res := f.runs(t, "good-1", id, "good-2", id)
			mustRun(t, res[0])
			mustRun(t, res[2])
			for _, r := range []snapshot.Result[snapshot.Snapshot]{res[1], res[3]} {
				fe := wantCode(t, r.Err, fault.DecodeFailed)
				if !strings.Contains(fe.Message, c.says) || !strings.Contains(fe.Message, id) {
					t.Fatalf("message %q does not name the run and mention %q", fe.Message, c.says)
				}
				if fe.RunID != id {
					t.Fatalf("the error names run %q, want %q", fe.RunID, id)
				}
				if r.Value != nil {
					t.Fatalf("a broken row returned data: %#v", r.Value)
				}
				for _, text := range []string{r.Err.Error(), fault.MessageOf(r.Err)} {
					if what, ok := containsAny(text, token, "SELECT", "WHERE", tmp); ok {
						t.Fatalf("the error %q carries %q", text, what)
					}
				}
			}
		})
	}

	t.Run("a broken round fails only its own edge of a page", func(t *testing.T) {
		f.create(t,
			engine.NewRun{ID: "lin", FlowName: "loop"},
			engine.NewRun{ID: "lin-1", FlowName: "loop", Round: &engine.Round{LineageID: "lin", Ordinal: 1, Previous: "lin"}},
			engine.NewRun{ID: "lin-2", FlowName: "loop", Round: &engine.Round{LineageID: "lin", Ordinal: 2, Previous: "lin-1"}},
		)
		l.Exec(t, `UPDATE flows_runs SET status = 'paused' WHERE run_id = 'lin-1'`)
		p := f.rounds(t, "lin", "lin", 10, nil)
		if got := edgeIDs(p.Edges); !slices.Equal(got, []string{"lin", "lin-1", "lin-2"}) {
			t.Fatalf("rounds %v", got)
		}
		mustRun(t, p.Edges[0].Node)
		mustRun(t, p.Edges[2].Node)
		if fe := wantCode(t, p.Edges[1].Node.Err, fault.DecodeFailed); fe.RunID != "lin-1" || p.Edges[1].Node.Value != nil {
			t.Fatalf("broken edge: %+v", p.Edges[1].Node)
		}
	})
}

// tempDirOf returns the folder a SQLite fixture lives in, or "".
func tempDirOf(f *fixture) string {
	if f.d != store.SQLite {
		return ""
	}
	p := f.db.SQLitePath()
	return p[:strings.LastIndexByte(p, '/')]
}

func exerciseErrors(t *testing.T, d store.Dialect) {
	ctx := context.Background()
	dsn := storetest.DSN(t, d)
	bare := storetest.OpenDSN(t, dsn, false) // not an engine store
	r := snapshot.NewReader(bare)
	forbidden := []string{"SELECT", "FROM flows", "WHERE", "UNION", "json_each", "unnest"}
	if d == store.SQLite {
		forbidden = append(forbidden, dsn[:strings.LastIndexByte(dsn, '/')])
	}
	check := func(t *testing.T, err error, code fault.Code) {
		t.Helper()
		wantCode(t, err, code)
		for _, text := range []string{err.Error(), fault.MessageOf(err)} {
			if what, ok := containsAny(text, forbidden...); ok {
				t.Fatalf("the error %q carries %q", text, what)
			}
		}
	}

	t.Run("reading a database that is not an engine store is a persistence failure without internals", func(t *testing.T) {
		_, err := r.Position(ctx)
		check(t, err, fault.PersistenceFailed)
		_, err = r.Runs(ctx, []string{"a"})
		check(t, err, fault.PersistenceFailed)
		_, err = r.Children(ctx, snapshot.PageRequest{Anchor: "a"})
		check(t, err, fault.PersistenceFailed)
		noOpenReads(t, bare)
	})

	f := newFixture(t, d)
	f.create(t, engine.NewRun{ID: "a", FlowName: "demo"})

	t.Run("a cancelled operation is a timeout", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := f.r.Runs(cctx, []string{"a"})
		check(t, err, fault.Timeout)
	})

	t.Run("a huge id is refused without being echoed", func(t *testing.T) {
		id := strings.Repeat("x", 100000)
		res := f.runs(t, id)
		check(t, res[0].Err, fault.BadUserInput)
		if n := len(fault.MessageOf(res[0].Err)); n > 200 {
			t.Fatalf("message of %d bytes", n)
		}
	})
}
