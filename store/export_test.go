package store

import "context"

// CatalogOf returns "kind name" for every object in the store's schema, read
// as Check reads it.
func CatalogOf(ctx context.Context, db *DB) (map[string]bool, error) {
	tx, err := db.BeginRead(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return db.catalog(ctx, tx)
}

// CatalogKey is how CatalogOf names an object.
func CatalogKey(kind Kind, name string) string { return catalogKey(kind, name) }

// MigrateTo migrates db up to version only, as an older flowsnap would.
func MigrateTo(ctx context.Context, db *DB, version int) (from, to int, err error) {
	return db.migrate(ctx, version)
}
