package store_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestInventoryIsWellFormed(t *testing.T) {
	t.Parallel()
	inv := store.Inventory()
	seen := map[string]int{}
	tables := map[string]bool{}
	functions := map[string]bool{}
	executes := regexp.MustCompile(`EXECUTE FUNCTION (\w+)\(`)
	for i, o := range inv {
		key := store.CatalogKey(o.Kind, o.Name)
		if j, dup := seen[key]; dup {
			t.Errorf("%s is listed twice (entries %d and %d)", key, j, i)
		}
		seen[key] = i
		if o.Since < 1 || o.Since > store.SchemaVersion {
			t.Errorf("%s: Since %d is not a version in 1..%d", key, o.Since, store.SchemaVersion)
		}
		if !strings.HasSuffix(o.Why, ".") || len(o.Why) < 20 {
			t.Errorf("%s: Why must be a sentence, got %q", key, o.Why)
		}
		if o.Dialects != store.BothDialects && o.Dialects != store.SQLiteOnly && o.Dialects != store.PostgresOnly {
			t.Errorf("%s: Dialects %q is not one of the three sets", key, o.Dialects)
		}
		if o.Kind == store.KindFunction {
			if o.In(store.SQLite) || !o.In(store.Postgres) {
				t.Errorf("%s: functions exist in PostgreSQL only", key)
			}
			functions[o.Name] = true
		} else if (o.Kind != store.KindTrigger || o.In(store.SQLite)) && (!o.In(store.SQLite) || !o.In(store.Postgres)) {
			t.Errorf("%s: tables, indexes and SQLite's triggers exist in both dialects under one name", key)
		}
		switch o.Kind {
		case store.KindTable:
			tables[o.Name] = true
			if o.Table != "" {
				t.Errorf("%s: a table belongs to no table", key)
			}
		case store.KindIndex, store.KindTrigger:
			if !tables[o.Table] {
				t.Errorf("%s: its table %q is not listed before it", key, o.Table)
			}
		}
		for _, d := range storetest.Dialects {
			ddl := o.DDL(d)
			if ddl == "" {
				continue
			}
			prefixes := map[store.Kind][]string{
				store.KindTable:    {"CREATE TABLE " + o.Name + " ("},
				store.KindIndex:    {"CREATE INDEX " + o.Name + " ON ", "CREATE UNIQUE INDEX " + o.Name + " ON "},
				store.KindTrigger:  {"CREATE TRIGGER " + o.Name + " ", "CREATE CONSTRAINT TRIGGER " + o.Name + " "},
				store.KindFunction: {"CREATE FUNCTION " + o.Name + "("},
			}[o.Kind]
			if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(ddl, p) }) {
				t.Errorf("%s (%s): DDL does not create it: %.60q", key, d, ddl)
			}
			if o.Table != "" && !strings.Contains(ddl, " ON "+o.Table) {
				t.Errorf("%s (%s): DDL is not on table %s", key, d, o.Table)
			}
			if strings.HasSuffix(strings.TrimSpace(ddl), ";") {
				t.Errorf("%s (%s): DDL must be one statement without a trailing semicolon", key, d)
			}
			if m := executes.FindStringSubmatch(ddl); m != nil && !functions[m[1]] {
				t.Errorf("%s (%s): runs function %s, which is not listed before it", key, d, m[1])
			}
		}
	}
}

func TestCatalogMatchesInventory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		found, err := store.CatalogOf(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, o := range store.Inventory() {
			if o.In(d) {
				listed[store.CatalogKey(o.Kind, o.Name)] = true
			}
		}
		for key := range found {
			if !listed[key] {
				t.Errorf("the store holds %s, which the inventory does not list", key)
			}
		}
		for key := range listed {
			if !found[key] {
				t.Errorf("the inventory lists %s, which the store lacks", key)
			}
		}
		t.Logf("%s: %d objects", d, len(found))
	})
}

func TestCatalogSeesObjectsTheInventoryDoesNotList(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		mustExec(t, db,
			`CREATE INDEX stray_index ON flows_runs (status)`,
			`CREATE VIEW stray_view AS SELECT run_id FROM flows_runs`,
			`CREATE TABLE stray_table (x INTEGER PRIMARY KEY)`,
		)
		found, err := store.CatalogOf(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"index stray_index", "view stray_view", "table stray_table"} {
			if !found[key] {
				t.Errorf("the catalog misses %s", key)
			}
		}
		if found["index stray_table_pkey"] || found["index sqlite_autoindex_stray_table_1"] {
			t.Errorf("the catalog lists a primary key's index as an object of its own")
		}
		if err := db.Check(ctx); err != nil {
			t.Errorf("objects an engine adds must not fail Check: %v", err)
		}
	})
}

func TestCheckNamesMissingObjects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d)
		mustExec(t, db, `DROP INDEX flows_runs_rounds`, dropTrigger(d, "flows_run_events_no_update", "flows_run_events"))
		err := db.Check(ctx)
		if !errors.Is(err, store.ErrSchemaIncomplete) {
			t.Fatalf("Check: got %v, want ErrSchemaIncomplete", err)
		}
		for _, want := range []string{"index flows_runs_rounds", "trigger flows_run_events_no_update", fmt.Sprintf("version %d", store.SchemaVersion)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check's error %q does not name %q", err, want)
			}
		}
	})
}
