package store_test

import (
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// slowStatement runs for seconds in either dialect.
func slowStatement(d store.Dialect) string {
	if d == store.Postgres {
		return `SELECT count(*) FROM generate_series(1, 100000000)`
	}
	return `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000000) SELECT count(*) FROM c`
}

func TestALimitedStatementEndsWithTimeoutAtItsLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Parallel()
		dsn := storetest.DSN(t, d)
		storetest.OpenDSN(t, dsn, true)
		db := storetest.OpenReader(t, dsn)
		ctx := testContext(t)
		tx, err := db.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		lq := tx.(store.LimitedQuerier)

		// Under its limit a statement answers, and the limit does not
		// outlive it.
		rows, err := lq.QueryLimited(ctx, 5*time.Second, `SELECT revision FROM flows_run_source WHERE singleton = 1`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil || n != 1 {
			t.Fatalf("a cheap limited statement: %d rows, %v", n, err)
		}
		rows.Close()
		if d == store.Postgres {
			var setting string
			if err := tx.QueryRow(ctx, `SHOW statement_timeout`).Scan(&setting); err != nil || setting != "0" {
				t.Fatalf("statement_timeout after a limited statement = %q, %v; want the session's 0", setting, err)
			}
		}

		start := time.Now()
		var timeoutErr error
		rows, err = lq.QueryLimited(ctx, 200*time.Millisecond, slowStatement(d))
		if err == nil {
			for rows.Next() {
			}
			timeoutErr = rows.Err()
			rows.Close()
		} else {
			timeoutErr = err
		}
		took := time.Since(start)
		if fault.CodeOf(timeoutErr) != fault.Timeout || !store.StatementTimedOut(timeoutErr) {
			t.Fatalf("a slow statement past its limit ended with %v (code %s), want its TIMEOUT", timeoutErr, fault.CodeOf(timeoutErr))
		}
		if took > 3*time.Second {
			t.Fatalf("a statement limited to 200ms ran %s", took)
		}
		// On SQLite the read goes on; PostgreSQL aborted it, and says so.
		if got, want := store.TransactionAborted(timeoutErr), d == store.Postgres; got != want {
			t.Fatalf("TransactionAborted = %v, want %v", got, want)
		}
		if d == store.SQLite {
			var rev int64
			if err := tx.QueryRow(ctx, `SELECT revision FROM flows_run_source WHERE singleton = 1`).Scan(&rev); err != nil {
				t.Fatalf("the read after an interrupted statement: %v", err)
			}
		}
	})
}

// A connection whose session has a statement_timeout of its own (here its
// startup parameter, as a DSN or the role's settings give it) has that
// value back after a limited statement, not the server's default, and a
// statement after it runs under that value, not the limit.
func TestALimitedStatementRestoresTheSessionsOwnTimeout(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.Postgres)
	storetest.OpenDSN(t, dsn, true)
	db := storetest.OpenReader(t, dsn+"&statement_timeout=7000")
	ctx := testContext(t)
	tx, err := db.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	show := func() string {
		t.Helper()
		var setting string
		if err := tx.QueryRow(ctx, `SHOW statement_timeout`).Scan(&setting); err != nil {
			t.Fatal(err)
		}
		return setting
	}
	if got := show(); got != "7s" {
		t.Fatalf("the session's statement_timeout = %q, want its startup parameter's 7s", got)
	}
	for range 2 {
		rows, err := tx.(store.LimitedQuerier).QueryLimited(ctx, 100*time.Millisecond, `SELECT current_setting('statement_timeout')`)
		if err != nil {
			t.Fatal(err)
		}
		var during string
		for rows.Next() {
			if err := rows.Scan(&during); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if during != "100ms" {
			t.Fatalf("statement_timeout during a limited statement = %q, want its limit's 100ms", during)
		}
		if got := show(); got != "7s" {
			t.Fatalf("statement_timeout after a limited statement = %q, want the session's 7s", got)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_sleep(0.3)`); err != nil {
		t.Fatalf("a statement longer than the last limit, after it: %v", err)
	}
}
