package snapshottest

import (
	"context"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
)

// journalTables are the tables of the run journal.
var journalTables = []string{"flows_steps", "flows_step_attempts", "flows_inbound_events", "flows_run_events"}

// LoosenJournal makes l accept journal rows that break their CHECK
// constraints too: on PostgreSQL it drops the CHECK constraints of the
// journal tables; on SQLite l's connection already ignores every CHECK.
// The journal's refusing triggers stay, so a broken row is written by
// updating a sound one in a way they allow, or by inserting it.
func (l *Loose) LoosenJournal(t testing.TB) {
	t.Helper()
	if l.d != store.Postgres {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := l.db.Write(ctx, func(tx store.Tx) error {
		drops, err := checkDrops(ctx, tx, journalTables...)
		if err != nil {
			return err
		}
		return execAll(ctx, tx, drops)
	})
	if err != nil {
		t.Fatalf("loosening the journal: %v", err)
	}
}
