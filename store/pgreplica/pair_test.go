package pgreplica_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowsnap/flowsnap/store/pgreplica"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgreplica.StopShared()
	os.Exit(code)
}

func count(t *testing.T, dsn string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTheStandbyFollowsThePrimaryUntilReplayIsPaused(t *testing.T) {
	p := pgreplica.Shared(t)
	name := p.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.PrimaryDSN(name))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (n int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.StandbyDSN(name)); n != 1 {
		t.Fatalf("the standby has %d rows, want 1", n)
	}
	// The standby is read-only: a write there must fail.
	sconn, err := pgx.Connect(ctx, p.StandbyDSN(name))
	if err != nil {
		t.Fatal(err)
	}
	defer sconn.Close(ctx)
	if _, err := sconn.Exec(ctx, "INSERT INTO t VALUES (3)"); err == nil {
		t.Fatal("the standby accepted a write: it is not a hot standby")
	}
	if err := p.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	before := count(t, p.StandbyDSN(name))
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (4)"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := count(t, p.StandbyDSN(name)); n != before {
		t.Fatalf("with replay paused the standby went from %d to %d rows", before, n)
	}
	if err := p.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.StandbyDSN(name)); n != before+1 {
		t.Fatalf("after replay resumed the standby has %d rows, want %d", n, before+1)
	}
}
