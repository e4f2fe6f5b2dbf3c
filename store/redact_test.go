package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/store"
)

func TestStoreErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://flowsnap:s3cret@127.0.0.1:1/engine?connect_timeout=1",
		"postgres://flowsnap:s3cret@127.0.0.1:notaport/engine",
		"postgres://flowsnap@127.0.0.1:1/engine?password=s3cret&connect_timeout=1",
		"mysql://flowsnap:s3cret@127.0.0.1/engine",
	} {
		ctx := testContext(t)
		_, err := store.Open(ctx, dsn, store.Options{ReadOnly: true, BusyTimeout: time.Second})
		if err == nil {
			t.Fatalf("opening %s succeeded", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error of opening a store shows its password: %v", err)
		}
	}
}
