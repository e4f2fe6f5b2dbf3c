package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// restrictedRole creates a PostgreSQL login role that may read the store at
// dsn exactly as docs/operating.md grants it — CONNECT, USAGE on the
// store's schema, SELECT on the flows tables and on flows_runs without the
// column waiting_token — and returns the store's DSN as that role and a
// connection of the administrator, for changing its grants. The role is
// dropped when the test ends.
func restrictedRole(t *testing.T, dsn string) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "flowsnap_reader_" + hex.EncodeToString(b[:])
	var schema, database string
	if err := admin.QueryRow(ctx, `SELECT current_schema(), current_database()`).Scan(&schema, &database); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE ROLE ` + role + ` LOGIN`)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping role %s: %v", role, err)
			return
		}
		defer conn.Close(ctx)
		// Its privileges go with it; the schema is dropped after.
		for _, sql := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	// What docs/operating.md, "Least privilege", tells an operator to run.
	var cols []string
	rows, err := admin.Query(ctx, `SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'flows_runs' AND column_name <> 'waiting_token' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	exec(`GRANT CONNECT ON DATABASE ` + pgx.Identifier{database}.Sanitize() + ` TO ` + role)
	exec(`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role)
	exec(`GRANT SELECT ON flows_schema_version, flows_run_source, flows_run_changes, flows_run_parents,
  flows_steps, flows_step_attempts, flows_inbound_events, flows_run_events TO ` + role)
	exec(`GRANT SELECT (` + strings.Join(cols, ", ") + `) ON flows_runs TO ` + role)

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String(), admin
}

func TestServeNeedsNoPrivilegeOnTheWaitingToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := runCmd(t, noEnv, "seed", "--db", dsn, "--runs", "300"); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	roleDSN, admin := restrictedRole(t, dsn)

	// The role really cannot read the token.
	as, err := pgx.Connect(ctx, roleDSN)
	if err != nil {
		t.Fatal(err)
	}
	_, err = as.Exec(ctx, `SELECT waiting_token FROM flows_runs LIMIT 1`)
	as.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("the restricted role reads waiting_token: %v", err)
	}
	// The digests the API must show, from the tokens.
	want := map[string]string{}
	rows, err := admin.Query(ctx, `SELECT run_id, waiting_token FROM flows_runs WHERE waiting_token IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, token string
		if err := rows.Scan(&id, &token); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(token))
		want[id] = hex.EncodeToString(sum[:])
	}
	rows.Close()
	if len(want) == 0 {
		t.Fatal("the seeded store has no waiting token")
	}

	addr, out, _ := startServeOutput(t, noEnv, "--db", roleDSN)
	base := "http://" + addr
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz as the restricted role = %d %s\n%s", code, body, out.String())
	}
	post := func(query string, vars map[string]any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		res, err := http.Post(base+"/graphql", "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Data   map[string]any `json:"data"`
			Errors []any          `json:"errors"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if len(body.Errors) > 0 || res.StatusCode != 200 {
			t.Fatalf("%s as the restricted role: %d %v", query, res.StatusCode, body.Errors)
		}
		return body.Data
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	data := post(`query($ids: [ID!]!) { runs(ids: $ids) { ... on Run { id state waiting { kind tokenDigest request }
  children(first: 5) { nodes { ... on Run { id waiting { tokenDigest } } } } rounds(first: 5) { nodes { ... on Run { id } } }
  steps(first: 5) { nodes { id ... on RunStep { attempts { result errorMessage } } } } inboundEvents { nodes { payload } } events { nodes { type } } } } }`,
		map[string]any{"ids": ids})
	for _, r := range data["runs"].([]any) {
		run := r.(map[string]any)
		w, _ := run["waiting"].(map[string]any)
		if w == nil || w["tokenDigest"] != want[run["id"].(string)] {
			t.Errorf("run %v: waiting %v, want the digest %s", run["id"], w, want[run["id"].(string)])
		}
	}
	// A filter of several ranges, and one of a single range, whose page
	// PostgreSQL reads in it (store.Dialect.ReadsRanges).
	post(`{ listRuns(first: 50, filter: { waitingKind: [APPROVAL, SIGNAL, HUMAN, TIMER, QUOTA, OTHER] }) { nodes { ... on Run { id waiting { tokenDigest } } } }
  oneRange: listRuns(first: 50, filter: { waitingKind: [APPROVAL] }) { nodes { ... on Run { id waiting { tokenDigest } } } }
  countRuns { count } runStats { count } flows { nodes } changes(since: 0, first: 100) { changes { run { ... on Run { id waiting { tokenDigest } } } } }
  runActivity(since: "2020-01-01T00:00:00.000Z", until: "2020-01-02T00:00:00.000Z") { started } }`, nil)

	// Without a privilege serving needs, the server is not ready, and says
	// what it cannot read.
	if _, err := admin.Exec(ctx, `REVOKE SELECT ON flows_steps FROM `+mustUser(t, roleDSN)); err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "flows_steps") {
		t.Errorf("/readyz without SELECT on flows_steps = %d %s", code, body)
	}
	if _, err := admin.Exec(ctx, `GRANT SELECT ON flows_steps TO `+mustUser(t, roleDSN)); err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz after the grant = %d %s", code, body)
	}
	if _, err := admin.Exec(ctx, `REVOKE SELECT (waiting_token_digest) ON flows_runs FROM `+mustUser(t, roleDSN)); err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "runs") {
		t.Errorf("/readyz without SELECT on waiting_token_digest = %d %s", code, body)
	}
}

func mustUser(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		t.Fatalf("no user in %q", dsn)
	}
	return u.User.Username()
}
