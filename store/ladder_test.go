package store_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func TestTheLadderEndsAtSchemaVersion(t *testing.T) {
	if v := store.LadderVersion(); v != store.SchemaVersion {
		t.Fatalf("the migration files end at version %d, SchemaVersion is %d", v, store.SchemaVersion)
	}
}

// laterRung is a rung after this flowsnap's last one, as a later flowsnap
// might add it: a column on an existing table and an index over it. Each
// dialect has its own file, as real rungs do.
const (
	laterRungSQLite = `-- A rung for tests only.

-- change table flows_runs
ALTER TABLE flows_runs ADD COLUMN note TEXT;

-- index flows_runs_by_note
CREATE INDEX flows_runs_by_note ON flows_runs (note);
`
	laterRungPostgres = `-- A rung for tests only.

-- change table flows_runs
ALTER TABLE flows_runs ADD COLUMN note text COLLATE "C";

-- index flows_runs_by_note
CREATE INDEX flows_runs_by_note ON flows_runs (note);
`
)

var laterObjects = []store.Object{{Name: "flows_runs_by_note", Kind: store.KindIndex, Table: "flows_runs", Since: store.SchemaVersion + 1,
	Dialects: store.BothDialects, Why: "Finds runs by their note, in tests of the ladder."}}

func TestAStoreClimbsALaterRung(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.Open(t, d) // at SchemaVersion, as this flowsnap leaves it
		mustExec(t, db, insertRun("kept"))
		from, to, inv, err := store.ClimbWithRung(ctx, db, laterRungSQLite, laterRungPostgres, laterObjects)
		if err != nil || from != store.SchemaVersion || to != store.SchemaVersion+1 {
			t.Fatalf("climbing: got %d→%d, %v; want %d→%d", from, to, err, store.SchemaVersion, store.SchemaVersion+1)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM flows_runs WHERE run_id = 'kept' AND note IS NULL`); n != 1 {
			t.Errorf("the run written before the climb: %d rows, want 1 with the new column NULL", n)
		}
		mustExec(t, db, `UPDATE flows_runs SET note = 'seen' WHERE run_id = 'kept'`)
		found, err := store.CatalogOf(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		listed := 0
		for _, o := range inv {
			if o.In(d) {
				listed++
				if !found[store.CatalogKey(o.Kind, o.Name)] {
					t.Errorf("after the climb the store lacks %s %s", o.Kind, o.Name)
				}
			}
		}
		if len(found) != listed {
			t.Errorf("after the climb the store holds %d objects, the longer inventory lists %d", len(found), listed)
		}
		if from, to, _, err := store.ClimbWithRung(ctx, db, laterRungSQLite, laterRungPostgres, laterObjects); err != nil || from != to {
			t.Errorf("climbing again: got %d→%d, %v; want nothing to do", from, to, err)
		}
		if err := db.Check(ctx); !errors.Is(err, store.ErrSchemaNewer) {
			t.Errorf("Check of a store a later ladder climbed: got %v, want ErrSchemaNewer", err)
		}
		if _, _, err := db.Migrate(ctx); !errors.Is(err, store.ErrSchemaNewer) {
			t.Errorf("Migrate of a store a later ladder climbed: got %v, want ErrSchemaNewer", err)
		}
	})
}

func TestAnEmptyStoreClimbsEveryRung(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.OpenDSN(t, storetest.DSN(t, d), false)
		from, to, _, err := store.ClimbWithRung(ctx, db, laterRungSQLite, laterRungPostgres, laterObjects)
		if err != nil || from != 0 || to != store.SchemaVersion+1 {
			t.Fatalf("climbing: got %d→%d, %v; want 0→%d", from, to, err, store.SchemaVersion+1)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM flows_schema_version`); n != int64(store.SchemaVersion+1) {
			t.Errorf("flows_schema_version has %d rows, want one per rung", n)
		}
	})
}

func TestMigrationFilesAreChecked(t *testing.T) {
	t.Parallel()
	table := store.Object{Name: "t", Kind: store.KindTable, Since: 1, Dialects: store.BothDialects, Why: "A table for the test."}
	good := "-- table t\nCREATE TABLE t (\n    x INTEGER\n);\n"
	files := func(sqlite, postgres string) fstest.MapFS {
		fsys := fstest.MapFS{
			"migrations/sqlite/001_first.sql":   {Data: []byte(sqlite)},
			"migrations/postgres/001_first.sql": {Data: []byte(postgres)},
		}
		return fsys
	}
	if err := store.LoadMigrations(files(good, good), []store.Object{table}); err != nil {
		t.Fatalf("well-formed files: %v", err)
	}
	for _, c := range []struct {
		name    string
		fsys    fstest.MapFS
		objects []store.Object
		want    string
	}{
		{"a statement creates an object the inventory does not list", files(good, good), nil, "does not list"},
		{"a listed object is missing in one dialect", files(good, "-- nothing here\n"), []store.Object{table}, "disagree"},
		{"a statement has no object line", files("CREATE TABLE t (x INTEGER);\n", good), []store.Object{table}, "must follow"},
		{"a statement never ends", files("-- table t\nCREATE TABLE t (\n    x INTEGER\n    )\n", good), []store.Object{table}, "does not end"},
		{"an object is created twice", files(good+good, good), []store.Object{table}, "twice"},
		{"a file is misnamed", fstest.MapFS{
			"migrations/sqlite/001_first.sql":   {Data: []byte(good)},
			"migrations/sqlite/first.sql":       {Data: []byte(good)},
			"migrations/postgres/001_first.sql": {Data: []byte(good)},
		}, []store.Object{table}, "NNN_name.sql"},
		{"a rung has no file in one dialect", fstest.MapFS{
			"migrations/sqlite/001_first.sql": {Data: []byte(good)},
			"migrations/postgres/README":      {Data: []byte("x")},
		}, []store.Object{table}, "NNN_name.sql"},
		{"a file has no rung", fstest.MapFS{
			"migrations/sqlite/001_first.sql":   {Data: []byte(good)},
			"migrations/sqlite/002_second.sql":  {Data: []byte("-- empty\n")},
			"migrations/postgres/001_first.sql": {Data: []byte(good)},
		}, []store.Object{table}, "no rung has version 2"},
		{"a statement changes an object of its own rung", files("-- change table t\nALTER TABLE t ADD COLUMN y INTEGER;\n", good), []store.Object{table}, "earlier rung"},
		{"an object is listed for another rung", files(good, good), []store.Object{{Name: "t", Kind: store.KindTable, Since: 2, Dialects: store.BothDialects, Why: "x"}}, "lists for version 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := store.LoadMigrations(c.fsys, c.objects)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}
