// Package pgreplica builds, for tests, a PostgreSQL primary and a streaming
// hot standby of it on free loopback ports, from the PostgreSQL binaries on
// the machine (initdb, pg_ctl, pg_basebackup -R), and pauses and resumes the
// standby's replay to make lag on demand.
//
// Setting up a pair takes seconds, so a test package shares one (Shared) and
// stops it from TestMain (StopShared); each test gets a database of its own
// on it (NewDatabase). When run as root, the servers run as the postgres
// user, since PostgreSQL refuses to run as root. Without the binaries a test
// is skipped, except under CI=true, where it fails.
package pgreplica

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pair is a running primary and its streaming hot standby.
type Pair struct {
	// PrimaryPort and StandbyPort are their ports on 127.0.0.1.
	PrimaryPort, StandbyPort int

	bin    string
	dir    string
	runAs  string // the user the servers run as; "" for the current one
	closed bool
}

// BinDir returns the folder of the PostgreSQL server binaries: the
// FLOWSNAP_PG_BIN environment variable, else the newest
// /usr/lib/postgresql/N/bin that has initdb.
func BinDir() (string, error) {
	if d := os.Getenv("FLOWSNAP_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) in /usr/lib/postgresql/*/bin; set FLOWSNAP_PG_BIN")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start builds and starts a pair in a fresh folder. Stop removes it.
func Start(ctx context.Context) (*Pair, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flowsnap-pgreplica-")
	if err != nil {
		return nil, err
	}
	p := &Pair{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		p.runAs = "postgres"
	}
	if err := p.start(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Pair) start(ctx context.Context) error {
	if err := os.Chmod(p.dir, 0o755); err != nil {
		return err
	}
	if p.runAs != "" {
		if err := chownTo(p.dir, p.runAs); err != nil {
			return err
		}
	}
	var err error
	if p.PrimaryPort, err = freePort(); err != nil {
		return err
	}
	if p.StandbyPort, err = freePort(); err != nil {
		return err
	}
	primary, standby := filepath.Join(p.dir, "primary"), filepath.Join(p.dir, "standby")
	if err := p.run(ctx, "initdb", "-D", primary, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		return err
	}
	conf := func(port int) string {
		return fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
shared_buffers = 16MB
max_connections = 60
wal_level = replica
max_wal_senders = 4
hot_standby = on
fsync = off
synchronous_commit = off
full_page_writes = off
logging_collector = off
`, port, p.dir)
	}
	if err := p.appendConf(primary, conf(p.PrimaryPort)); err != nil {
		return err
	}
	if err := p.run(ctx, "pg_ctl", "-D", primary, "-l", filepath.Join(p.dir, "primary.log"), "-w", "-t", "60", "start"); err != nil {
		return err
	}
	if err := p.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.PrimaryPort), "-U", "postgres",
		"-D", standby, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return err
	}
	if err := p.appendConf(standby, conf(p.StandbyPort)); err != nil {
		return err
	}
	return p.run(ctx, "pg_ctl", "-D", standby, "-l", filepath.Join(p.dir, "standby.log"), "-w", "-t", "60", "start")
}

// appendConf adds settings to a data folder's postgresql.conf (later lines
// win), as the user that owns it.
func (p *Pair) appendConf(dataDir, text string) error {
	f, err := os.OpenFile(filepath.Join(dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(text)
	return err
}

// run runs one of the binaries, as the servers' user.
func (p *Pair) run(ctx context.Context, name string, args ...string) error {
	path := filepath.Join(p.bin, name)
	var cmd *exec.Cmd
	if p.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", p.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out, p.logs())
	}
	return nil
}

func (p *Pair) logs() string {
	var b strings.Builder
	for _, f := range []string{"primary.log", "standby.log"} {
		if data, err := os.ReadFile(filepath.Join(p.dir, f)); err == nil {
			fmt.Fprintf(&b, "--- %s\n%s", f, data)
		}
	}
	return b.String()
}

// Stop stops both servers and removes their folder. It is safe to call
// more than once.
func (p *Pair) Stop() {
	if p == nil || p.closed {
		return
	}
	p.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, d := range []string{"standby", "primary"} {
		data := filepath.Join(p.dir, d)
		if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err == nil {
			_ = p.run(ctx, "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		}
	}
	_ = os.RemoveAll(p.dir)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// DSN returns the URL of database db on the server at port.
func DSN(port int, db string, params ...string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db)
	for _, kv := range params {
		u += "&" + kv
	}
	return u
}

// PrimaryDSN and StandbyDSN return the URLs of database db on each server.
func (p *Pair) PrimaryDSN(db string) string { return DSN(p.PrimaryPort, db) }

// StandbyDSN returns the URL of database db on the standby.
func (p *Pair) StandbyDSN(db string) string { return DSN(p.StandbyPort, db) }

// NewDatabase creates an empty database of its own on the primary, waits
// until the standby has it, and drops it when the test ends.
func (p *Pair) NewDatabase(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "flowsnap_" + hex.EncodeToString(b[:])
	if err := p.exec(ctx, p.PrimaryDSN("postgres"), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("creating database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = p.ResumeReplay(ctx)
		if err := p.exec(ctx, p.PrimaryDSN("postgres"), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("dropping database %s: %v", name, err)
		}
	})
	if err := p.WaitCaughtUp(ctx); err != nil {
		tb.Fatal(err)
	}
	return name
}

func (p *Pair) exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func (p *Pair) queryText(ctx context.Context, dsn, sql string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

// PauseReplay stops the standby applying WAL, so it stays at the position
// it has until ResumeReplay, however far the primary moves on.
func (p *Pair) PauseReplay(ctx context.Context) error {
	if err := p.exec(ctx, p.StandbyDSN("postgres"), "SELECT pg_wal_replay_pause()"); err != nil {
		return fmt.Errorf("pausing replay: %w", err)
	}
	return p.pollStandby(ctx, "SELECT pg_get_wal_replay_pause_state()", "paused", "replay did not pause")
}

// ResumeReplay lets the standby apply WAL again.
func (p *Pair) ResumeReplay(ctx context.Context) error {
	if err := p.exec(ctx, p.StandbyDSN("postgres"), "SELECT pg_wal_replay_resume()"); err != nil {
		return fmt.Errorf("resuming replay: %w", err)
	}
	return nil
}

// WaitCaughtUp waits until the standby has replayed everything the primary
// had written when it was called.
func (p *Pair) WaitCaughtUp(ctx context.Context) error {
	lsn, err := p.queryText(ctx, p.PrimaryDSN("postgres"), "SELECT pg_current_wal_insert_lsn()::text")
	if err != nil {
		return err
	}
	return p.pollStandby(ctx, "SELECT (pg_last_wal_replay_lsn() >= '"+lsn+"'::pg_lsn)::text", "true",
		"the standby did not catch up with "+lsn)
}

// pollStandby asks the standby query until it answers want, every few
// milliseconds, or fails with what once ctx ends.
func (p *Pair) pollStandby(ctx context.Context, query, want, what string) error {
	for {
		got, err := p.queryText(ctx, p.StandbyDSN("postgres"), query)
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

var (
	sharedOnce sync.Once
	shared     *Pair
	sharedErr  error
)

// Shared returns the package's pair, starting it on first use. A test
// package that uses it stops it in TestMain with StopShared. Without the
// PostgreSQL binaries it skips the test, or fails it when CI=true.
func Shared(tb testing.TB) *Pair {
	tb.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared, sharedErr = Start(ctx)
	})
	if sharedErr != nil {
		if _, err := BinDir(); err != nil && os.Getenv("CI") != "true" {
			tb.Skipf("no PostgreSQL primary and standby: %v", err)
		}
		tb.Fatalf("starting a PostgreSQL primary and standby: %v", sharedErr)
	}
	return shared
}

// StopShared stops the package's pair, if one was started.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// chownTo gives dir to the user name, who runs the servers.
func chownTo(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("running PostgreSQL or PgBouncer as root needs the %s user: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}
