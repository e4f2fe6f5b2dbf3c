package vocab_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// catalog reads the definitions of a migrated store's objects as the
// database itself holds them, not as the migration files spell them.
type catalog struct {
	t  *testing.T
	d  store.Dialect
	tx store.Tx
}

func openCatalog(t *testing.T, d store.Dialect) *catalog {
	db := storetest.Open(t, d)
	ctx := context.Background()
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return &catalog{t: t, d: d, tx: tx}
}

func (c *catalog) text(q string, args ...any) string {
	c.t.Helper()
	var s string
	if err := c.tx.QueryRow(context.Background(), q, args...).Scan(&s); err != nil {
		c.t.Fatalf("reading the catalog (%s %v): %v", q, args, err)
	}
	return s
}

// check returns the text of CHECK constraint name of table: PostgreSQL's
// pg_get_constraintdef, or the constraint cut from the CREATE TABLE that
// SQLite keeps in sqlite_master.
func (c *catalog) check(table, name string) string {
	c.t.Helper()
	if c.d == store.Postgres {
		return c.text(`SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conname = $1 AND conrelid = to_regclass($2) AND contype = 'c'`, name, table)
	}
	ddl := c.text(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = $1`, table)
	head := "CONSTRAINT " + name + " CHECK ("
	i := strings.Index(ddl, head)
	if i < 0 {
		c.t.Fatalf("table %s has no constraint %s in the catalog: %s", table, name, ddl)
	}
	// The constraint runs to the parenthesis that closes its CHECK.
	depth, start := 0, i+len(head)-1
	for j := start; j < len(ddl); j++ {
		switch ddl[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return ddl[start : j+1]
			}
		}
	}
	c.t.Fatalf("constraint %s of %s does not end: %s", name, table, ddl)
	return ""
}

// index returns the definition of index name.
func (c *catalog) index(name string) string {
	c.t.Helper()
	if c.d == store.Postgres {
		return c.text(`SELECT pg_get_indexdef(to_regclass($1))`, name)
	}
	return c.text(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = $1`, name)
}

// all returns every definition the catalog holds for the store's tables
// and indexes.
func (c *catalog) all() string {
	c.t.Helper()
	q := `SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name LIKE 'flows\_%' ESCAPE '\'`
	if c.d == store.Postgres {
		q = `SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k
			WHERE k.contype = 'c' AND k.connamespace = current_schema()::regnamespace`
	}
	rows, err := c.tx.Query(context.Background(), q)
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			c.t.Fatal(err)
		}
		sb.WriteString(s)
		sb.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		c.t.Fatal(err)
	}
	return sb.String()
}

var literal = regexp.MustCompile(`'([^']*)'`)

// literals returns the string literals of a definition, in order.
func literals(def string) []string {
	var out []string
	for _, m := range literal.FindAllStringSubmatch(def, -1) {
		out = append(out, m[1])
	}
	return out
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// TestTheEnumsAreTheCheckLists holds each Go enumeration equal to the list
// of values the CHECK constraint of its column admits, in both dialects, as
// the migrated database's catalog states it.
func TestTheEnumsAreTheCheckLists(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		c := openCatalog(t, d)
		for _, e := range []struct {
			table, constraint string
			values            []string
		}{
			{"flows_runs", "flows_runs_status", strs(vocab.Statuses)},
			{"flows_steps", "flows_steps_type", strs(vocab.StepTypes)},
			{"flows_step_attempts", "flows_step_attempts_state", strs(vocab.AttemptStates)},
			{"flows_run_events", "flows_run_events_type", strs(vocab.RunEventTypes)},
		} {
			def := c.check(e.table, e.constraint)
			if got := literals(def); !slices.Equal(got, e.values) {
				t.Errorf("%s admits %q, the Go enumeration is %q (catalog: %s)", e.constraint, got, e.values, def)
			}
		}

		// Result types are admitted inside the attempt's shape.
		shape := c.check("flows_step_attempts", "flows_step_attempts_shape")
		var results []string
		for _, m := range regexp.MustCompile(`result_type = '(\w+)'`).FindAllStringSubmatch(shape, -1) {
			results = append(results, m[1])
		}
		if want := strs(vocab.ResultTypes); !slices.Equal(results, want) {
			t.Errorf("flows_step_attempts_shape admits result types %q, the Go enumeration is %q (catalog: %s)", results, want, shape)
		}
	})
}

// arms returns the arms of a CASE expression: for each WHEN, the literals
// of its condition and of its result, joined by commas.
func arms(t *testing.T, def string) [][2]string {
	var got [][2]string
	rest := strings.Join(strings.Fields(def), " ")
	for {
		i := strings.Index(rest, "WHEN ")
		if i < 0 {
			return got
		}
		rest = rest[i+len("WHEN "):]
		j := strings.Index(rest, " THEN ")
		if j < 0 {
			t.Fatalf("a WHEN without THEN: %s", def)
		}
		cond := rest[:j]
		rest = rest[j+len(" THEN "):]
		k := len(rest)
		for _, stop := range []string{" WHEN ", " ELSE ", " END"} {
			if n := strings.Index(rest, stop); n >= 0 && n < k {
				k = n
			}
		}
		got = append(got, [2]string{strings.Join(literals(cond), ","), strings.Join(literals(rest[:k]), ",")})
	}
}

// TestTheWaitingKindsAreTheIndexes holds KindOf to the expression that
// flows_runs_by_waiting_kind indexes, in the catalog of both dialects and
// as store.WaitingKindExpr spells it for queries: the reasons of each WHEN,
// and what it yields.
func TestTheWaitingKindsAreTheIndexes(t *testing.T) {
	t.Parallel()
	want := [][2]string{
		{strings.Join(vocab.OwnKindReasons, ","), ""}, // the reason itself
		{strings.Join(vocab.SignalReasons, ","), string(vocab.WaitingSignal)},
		{"", string(vocab.WaitingOther)},
	}
	if got := arms(t, store.WaitingKindExpr); !slices.Equal(got, want) {
		t.Errorf("store.WaitingKindExpr classifies %q, KindOf %q", got, want)
	}
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		def := openCatalog(t, d).index("flows_runs_by_waiting_kind")
		if got := arms(t, def); !slices.Equal(got, want) {
			t.Errorf("flows_runs_by_waiting_kind classifies %q, KindOf %q (catalog: %s)", got, want, def)
		}
	})

	kinds := []string{string(vocab.WaitingSignal), string(vocab.WaitingOther)}
	kinds = append(kinds, vocab.OwnKindReasons...)
	if !sameSet(kinds, strs(vocab.WaitingKinds)) {
		t.Errorf("the index yields kinds %q, WaitingKinds are %q", kinds, vocab.WaitingKinds)
	}
	for _, r := range vocab.OwnKindReasons {
		if vocab.KindOf(r) != vocab.WaitingKind(r) {
			t.Errorf("KindOf(%q) = %q", r, vocab.KindOf(r))
		}
	}
	for _, r := range vocab.SignalReasons {
		if vocab.KindOf(r) != vocab.WaitingSignal {
			t.Errorf("KindOf(%q) = %q", r, vocab.KindOf(r))
		}
	}
	if k := vocab.KindOf("lunch"); k != vocab.WaitingOther {
		t.Errorf(`KindOf("lunch") = %q`, k)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// TestTheBoundsAreTheChecks holds MaxSafe and MaxIDUnits to the numbers the
// store's CHECK constraints bound integers and identifiers by: every large
// number in them is MaxSafe, and identifiers are bounded by MaxIDUnits.
func TestTheBoundsAreTheChecks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		c := openCatalog(t, d)
		all := c.all()
		large := regexp.MustCompile(`\b\d{10,}\b`).FindAllString(all, -1)
		if len(large) == 0 {
			t.Fatalf("no integer bound in the catalog's constraints:\n%s", all)
		}
		for _, n := range large {
			if n != strconv.FormatInt(vocab.MaxSafe, 10) {
				t.Errorf("a constraint bounds by %s, MaxSafe is %d", n, int64(vocab.MaxSafe))
			}
		}
		ids := c.check("flows_runs", "flows_runs_identifiers")
		bounds := regexp.MustCompile(`\b\d+\b`).FindAllString(ids, -1)
		var seen bool
		for _, n := range bounds {
			switch n {
			case strconv.Itoa(vocab.MaxIDUnits):
				seen = true
			case "0", "1":
			default:
				t.Errorf("flows_runs_identifiers bounds by %s, MaxIDUnits is %d (catalog: %s)", n, vocab.MaxIDUnits, ids)
			}
		}
		if !seen {
			t.Errorf("flows_runs_identifiers does not bound by MaxIDUnits %d: %s", vocab.MaxIDUnits, ids)
		}
	})
}
