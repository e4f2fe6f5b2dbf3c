package store_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

func readSource(t *testing.T, db *store.DB) string {
	t.Helper()
	ctx := testContext(t)
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var source string
	if err := tx.QueryRow(ctx, `SELECT source FROM flows_run_source WHERE singleton = 1`).Scan(&source); err != nil {
		t.Fatal(err)
	}
	return source
}

func TestMigrateCreatesTheStoreOnceAndThenChangesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.OpenDSN(t, storetest.DSN(t, d), false)
		if v, err := db.Version(ctx); err != nil || v != 0 {
			t.Fatalf("Version of an empty database: got %d, %v; want 0", v, err)
		}
		from, to, err := db.Migrate(ctx)
		if err != nil || from != 0 || to != store.SchemaVersion {
			t.Fatalf("first Migrate: got %d→%d, %v; want 0→%d", from, to, err, store.SchemaVersion)
		}
		source := readSource(t, db)
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(source) {
			t.Errorf("source %q is not 32 lowercase hex characters", source)
		}
		if rev := sourceRevision(t, db); rev != 0 {
			t.Errorf("a new store's revision is %d, want 0", rev)
		}
		from, to, err = db.Migrate(ctx)
		if err != nil || from != store.SchemaVersion || to != store.SchemaVersion {
			t.Fatalf("second Migrate: got %d→%d, %v; want %d→%d", from, to, err, store.SchemaVersion, store.SchemaVersion)
		}
		if again := readSource(t, db); again != source {
			t.Errorf("migrating again changed the source from %s to %s", source, again)
		}
		if v, err := db.Version(ctx); err != nil || v != store.SchemaVersion {
			t.Errorf("Version: got %d, %v; want %d", v, err, store.SchemaVersion)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM flows_schema_version`); n != int64(store.SchemaVersion) {
			t.Errorf("flows_schema_version has %d rows, want one per version", n)
		}
		if err := db.Check(ctx); err != nil {
			t.Errorf("Check: %v", err)
		}
		if other := readSource(t, storetest.Open(t, d)); other == source {
			t.Errorf("two stores share the source %s", source)
		}
	})
}

func TestConcurrentMigratorsApplyEachStepOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		dsn := storetest.DSN(t, d)
		dbs := []*store.DB{storetest.OpenDSN(t, dsn, false), storetest.OpenDSN(t, dsn, false), storetest.OpenDSN(t, dsn, false)}
		var wg sync.WaitGroup
		errs := make([]error, len(dbs))
		froms := make([]int, len(dbs))
		for i, db := range dbs {
			wg.Go(func() { froms[i], _, errs[i] = db.Migrate(ctx) })
		}
		wg.Wait()
		created := 0
		for i, err := range errs {
			if err != nil {
				t.Errorf("migrator %d: %v", i, err)
			}
			if froms[i] == 0 {
				created++
			}
		}
		if created != 1 {
			t.Errorf("%d migrators report creating the store, want 1", created)
		}
		if n := queryInt(t, dbs[0], `SELECT count(*) FROM flows_schema_version`); n != int64(store.SchemaVersion) {
			t.Errorf("flows_schema_version has %d rows, want %d", n, store.SchemaVersion)
		}
		if err := dbs[0].Check(ctx); err != nil {
			t.Errorf("Check: %v", err)
		}
	})
}

func TestCheckServesAStoreOpenedReadOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		dsn := storetest.DSN(t, d)
		storetest.OpenDSN(t, dsn, true)
		ro := storetest.OpenReader(t, dsn)
		if err := ro.Check(ctx); err != nil {
			t.Errorf("Check: %v", err)
		}
		if v, err := ro.Version(ctx); err != nil || v != store.SchemaVersion {
			t.Errorf("Version: got %d, %v", v, err)
		}
		if d == store.SQLite {
			if _, _, err := ro.Migrate(ctx); err == nil {
				t.Errorf("Migrate on a read-only store succeeded")
			}
		}
	})
}

func TestCheckRefusesWhatItCannotServe(t *testing.T) {
	tests := []struct {
		name    string
		migrate bool
		setup   func(d store.Dialect) []string
		kind    error
		says    []string
	}{
		{
			name: "an empty database is not an engine store",
			kind: store.ErrNotEngineStore,
			says: []string{"is not a flowsnap engine store (no flows_run_source table)"},
		},
		{
			name: "a flows_run_source table flowsnap did not create is not an engine store",
			setup: func(store.Dialect) []string {
				return []string{`CREATE TABLE flows_run_source (singleton INTEGER PRIMARY KEY, source TEXT, revision INTEGER)`}
			},
			kind: store.ErrNotEngineStore,
			says: []string{"no recorded schema version"},
		},
		{
			name:    "a store of a newer flowsnap is refused naming both versions",
			migrate: true,
			setup: func(store.Dialect) []string {
				return []string{`INSERT INTO flows_schema_version (version, name, applied_at_ms) VALUES (7, 'from the future', 0)`}
			},
			kind: store.ErrSchemaNewer,
			says: []string{fmt.Sprintf("has schema version 7, newer than this flowsnap knows (%d): upgrade flowsnap", store.SchemaVersion)},
		},
		{
			name:    "a store that lost its source row is refused",
			migrate: true,
			setup: func(d store.Dialect) []string {
				return []string{dropTrigger(d, "flows_run_source_keep", "flows_run_source"), `DELETE FROM flows_run_source`}
			},
			kind: store.ErrSchemaIncomplete,
			says: []string{"no flows_run_source row"},
		},
	}
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				dsn := storetest.DSN(t, d)
				db := storetest.OpenDSN(t, dsn, tt.migrate)
				if tt.setup != nil {
					mustExec(t, db, tt.setup(d)...)
				}
				err := storetest.OpenReader(t, dsn).Check(ctx)
				if !errors.Is(err, tt.kind) {
					t.Fatalf("Check: got %v, want %v", err, tt.kind)
				}
				for _, s := range tt.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Check's error %q does not say %q", err, s)
					}
				}
				if !strings.Contains(err.Error(), db.String()) {
					t.Errorf("Check's error %q does not name the database (%s)", err, db)
				}
			})
		}
	})
}

func TestMigrateRefusesStoresItDidNotMakeOrDoesNotKnow(t *testing.T) {
	tests := []struct {
		name    string
		migrate bool
		setup   string
		kind    error
		says    string
	}{
		{
			name:    "a store of a newer flowsnap is left alone",
			migrate: true,
			setup:   `INSERT INTO flows_schema_version (version, name, applied_at_ms) VALUES (7, 'from the future', 0)`,
			kind:    store.ErrSchemaNewer,
			says:    fmt.Sprintf("schema version 7, newer than this flowsnap knows (%d)", store.SchemaVersion),
		},
		{
			name:  "engine tables without a recorded version are left alone",
			setup: `CREATE TABLE flows_run_source (singleton INTEGER PRIMARY KEY, source TEXT, revision INTEGER)`,
			kind:  store.ErrNotEngineStore,
			says:  "without a recorded schema version",
		},
	}
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				db := storetest.OpenDSN(t, storetest.DSN(t, d), tt.migrate)
				mustExec(t, db, tt.setup)
				before, _ := db.Version(ctx)
				from, to, err := db.Migrate(ctx)
				if !errors.Is(err, tt.kind) {
					t.Fatalf("Migrate: got %v, want %v", err, tt.kind)
				}
				if !strings.Contains(err.Error(), tt.says) {
					t.Errorf("Migrate's error %q does not say %q", err, tt.says)
				}
				if from != before || to != before {
					t.Errorf("Migrate reports %d→%d, want %d→%d", from, to, before, before)
				}
			})
		}
	})
}

// TestAVersion1StoreUpgrades migrates a store as the first release did, with
// a run in it, and checks that Migrate adds the objects of every later rung
// (the listing indexes of version 2, the ops indexes of version 3) and
// nothing else changes.
func TestAVersion1StoreUpgrades(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		ctx := testContext(t)
		db := storetest.OpenDSN(t, storetest.DSN(t, d), false)
		if from, to, err := store.MigrateTo(ctx, db, 1); err != nil || from != 0 || to != 1 {
			t.Fatalf("migrating to version 1: %d→%d, %v", from, to, err)
		}
		mustExec(t, db, `INSERT INTO flows_runs (run_id, status, created_at_ms, state_json) VALUES ('r1', 'pending', 5, '{"flowName":"f"}')`)
		source := readSource(t, db)
		if err := db.Check(ctx); !errors.Is(err, store.ErrSchemaOlder) {
			t.Fatalf("Check of a version 1 store: %v, want ErrSchemaOlder", err)
		}
		catalog, err := store.CatalogOf(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		var rung []store.Object
		for _, o := range store.Inventory() {
			if o.Since >= 2 && o.In(d) {
				rung = append(rung, o)
				if catalog[store.CatalogKey(o.Kind, o.Name)] {
					t.Errorf("a version 1 store already has %s %s", o.Kind, o.Name)
				}
			}
		}
		if len(rung) == 0 {
			t.Fatal("the inventory has no objects after version 1")
		}
		if from, to, err := db.Migrate(ctx); err != nil || from != 1 || to != store.SchemaVersion {
			t.Fatalf("Migrate: %d→%d, %v; want 1→%d", from, to, err, store.SchemaVersion)
		}
		if err := db.Check(ctx); err != nil {
			t.Fatalf("Check after the upgrade: %v", err)
		}
		catalog, err = store.CatalogOf(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rung {
			if !catalog[store.CatalogKey(o.Kind, o.Name)] {
				t.Errorf("the upgrade did not create %s %s", o.Kind, o.Name)
			}
		}
		if got := readSource(t, db); got != source {
			t.Errorf("the upgrade changed the source %s to %s", source, got)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM flows_runs WHERE run_id = 'r1'`); n != 1 {
			t.Errorf("the run is gone after the upgrade")
		}
	})
}
