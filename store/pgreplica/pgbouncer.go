package pgreplica

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PgBouncer starts a PgBouncer in transaction pooling mode on a free
// loopback port, in front of the databases given (alias → libpq connection
// string, e.g. "host=127.0.0.1 port=5432 dbname=x"), with at most one
// server connection per database, so that client connections share it.
// It is stopped, and its folder removed, when the test ends. Without
// pgbouncer on the PATH the test is skipped, except under CI=true.
func PgBouncer(tb testing.TB, databases map[string]string) int {
	tb.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("pgbouncer is required in CI: %v", err)
		}
		tb.Skipf("no pgbouncer (apt-get install pgbouncer): %v", err)
	}
	dir, err := os.MkdirTemp("", "flowsnap-pgbouncer-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	runAs := ""
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		runAs = "postgres"
		if err := chownTo(dir, runAs); err != nil {
			tb.Fatal(err)
		}
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	var dbs []string
	for alias, conn := range databases {
		dbs = append(dbs, alias+" = "+conn)
	}
	sort.Strings(dbs)
	ini := fmt.Sprintf(`[databases]
%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 1
max_client_conn = 200
logfile = %s
pidfile = %s
`, strings.Join(dbs, "\n"), port, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	for name, text := range map[string]string{"pgbouncer.ini": ini, "users.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	args := []string{bin, filepath.Join(dir, "pgbouncer.ini")}
	if runAs != "" {
		args = append([]string{"runuser", "-u", runAs, "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting pgbouncer: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return port
		}
		select {
		case err := <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			tb.Fatalf("pgbouncer stopped: %v\n%s", err, log)
		case <-ctx.Done():
			tb.Fatalf("pgbouncer did not listen on port %d", port)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
