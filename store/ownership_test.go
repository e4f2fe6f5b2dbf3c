package store_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/engine"
	"github.com/flowsnap/flowsnap/store"
)

// The two users of the ownership tests: the engine writes the store as one,
// flowsnap reads it as the other. CI creates them (.ci/run); a test run as
// root creates them when they are missing.
const (
	engineUser = "flowsnap-test-engine"
	readerUser = "flowsnap-test-reader"
)

// helperEnv selects what the test binary does when a test runs it as another
// user (TestOwnershipHelper).
const helperEnv = "FLOWSNAP_OWNERSHIP_HELPER"

// asUser runs the test binary, copied where every user may run it, as user
// u, doing action on dsn; it returns what the helper printed.
type asUser struct {
	bin   string
	creds map[string]*syscall.Credential
}

func twoUsers(t *testing.T) *asUser {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		unavailable("the ownership tests run processes as two users, which needs root")
	}
	a := &asUser{creds: map[string]*syscall.Credential{}}
	for _, name := range []string{engineUser, readerUser} {
		u, err := user.Lookup(name)
		if err != nil {
			if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
				unavailable("creating user %s: %v\n%s", name, err, out)
			}
			if u, err = user.Lookup(name); err != nil {
				unavailable("user %s: %v", name, err)
			}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		a.creds[name] = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	// The test binary sits in a folder only root may enter.
	dir := sharedDir(t, 0o755)
	a.bin = filepath.Join(dir, "store.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(a.bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return a
}

// sharedDir makes a folder outside the test's own temporary one (which only
// root may enter), with mode perm, removed at the end.
func sharedDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "flowsnap-ownership-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// helperResult is what the helper prints.
type helperResult struct {
	Err      string `json:"err,omitempty"`
	Revision int64  `json:"revision"`
}

// command prepares the helper as user u.
func (a *asUser) command(ctx context.Context, u, action, dsn string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, a.bin, "-test.run=^TestOwnershipHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+action, "FLOWSNAP_OWNERSHIP_DSN="+dsn)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.creds[u]}
	return cmd
}

// run runs action as u and returns its result.
func (a *asUser) run(t *testing.T, u, action, dsn string) helperResult {
	t.Helper()
	out, err := a.command(testContext(t), u, action, dsn).Output()
	if err != nil {
		t.Fatalf("%s as %s: %v\n%s", action, u, err, out)
	}
	return parseResult(t, out)
}

func parseResult(t *testing.T, out []byte) helperResult {
	t.Helper()
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			var r helperResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("the helper printed no result:\n%s", out)
	return helperResult{}
}

func fileOwner(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// fileStamp names a file's state: absent, or its owner, size and
// modification time.
func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	return fmt.Sprintf("uid %d, %d bytes, modified %s", fi.Sys().(*syscall.Stat_t).Uid, fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestOwnershipHelper is the other user's side of the ownership tests; it
// does nothing unless one of them runs it.
func TestOwnershipHelper(t *testing.T) {
	action := os.Getenv(helperEnv)
	if action == "" {
		t.Skip("run by the ownership tests only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := os.Getenv("FLOWSNAP_OWNERSHIP_DSN")
	r := helperResult{}
	if err := ownershipAction(ctx, action, dsn, &r); err != nil {
		r.Err = err.Error()
	}
	b, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", b)
}

func ownershipAction(ctx context.Context, action, dsn string, r *helperResult) error {
	revision := func(db *store.DB) error {
		tx, err := db.BeginRead(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		return tx.QueryRow(ctx, `SELECT revision FROM flows_run_source WHERE singleton = 1`).Scan(&r.Revision)
	}
	write := func(db *store.DB) error {
		sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := engine.Simulate(sctx, db, engine.SimOptions{Rate: 200, Seed: 1}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return revision(db)
	}
	switch action {
	case "create", "write", "hold":
		db, err := store.Open(ctx, dsn, store.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		if _, _, err := db.Migrate(ctx); err != nil {
			return err
		}
		if action == "create" {
			if _, err := engine.Seed(ctx, db, engine.SeedOptions{Runs: 20, Seed: 1}); err != nil {
				return err
			}
			return revision(db)
		}
		if err := write(db); err != nil {
			return err
		}
		if action == "hold" {
			// Writes again once the test closes stdin, having read
			// meanwhile.
			fmt.Println("HOLDING")
			_, _ = io.Copy(io.Discard, os.Stdin)
			return write(db)
		}
		return nil
	case "read":
		db, err := store.Open(ctx, dsn, store.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer db.Close()
		return revision(db)
	}
	return fmt.Errorf("unknown action %q", action)
}

func TestAReaderOfAnotherUsersStoreNeverCreatesItsWALFiles(t *testing.T) {
	a := twoUsers(t)
	dir := sharedDir(t, 0o1777)
	path := filepath.Join(dir, "engine.db")
	created := a.run(t, engineUser, "create", path)
	if created.Err != "" || created.Revision == 0 {
		t.Fatalf("creating the store as %s: %+v", engineUser, created)
	}
	if exists(path+"-wal") || exists(path+"-shm") {
		t.Fatalf("the engine left its -wal or -shm file behind after closing the store")
	}

	t.Run("with the engine stopped, a read-only open is refused, saying what to do, and creates nothing", func(t *testing.T) {
		got := a.run(t, readerUser, "read", path)
		for _, want := range []string{"-wal and -shm files do not exist", "start the engine", "immutable=1", "uid " + strconv.Itoa(int(a.creds[engineUser].Uid))} {
			if !strings.Contains(got.Err, want) {
				t.Errorf("refusal %q does not say %q", got.Err, want)
			}
		}
		if exists(path+"-wal") || exists(path+"-shm") {
			t.Errorf("the refused open created the -wal or -shm file (owner of the -shm: %d)", fileOwner(t, path+"-shm"))
		}
		if w := a.run(t, engineUser, "write", path); w.Err != "" {
			t.Errorf("the engine cannot write after the reader tried: %s", w.Err)
		}
	})

	t.Run("a store nobody writes is served as immutable", func(t *testing.T) {
		// The engine's write above closed the store, which normally removes
		// its -wal and -shm files; what it left is the engine's, and the
		// read must neither create nor touch either file.
		before := map[string]string{}
		for _, f := range []string{path + "-wal", path + "-shm"} {
			before[f] = fileStamp(f)
		}
		got := a.run(t, readerUser, "read", "file:"+path+"?immutable=1")
		if got.Err != "" || got.Revision == 0 {
			t.Fatalf("reading immutable: %+v", got)
		}
		for f, was := range before {
			if now := fileStamp(f); now != was {
				t.Errorf("the immutable read created or changed %s: %s, then %s", filepath.Base(f), was, now)
			}
		}
	})

	t.Run("with the engine running, the store is read and the engine goes on writing", func(t *testing.T) {
		engineCmd := a.command(testContext(t), engineUser, "hold", path)
		stdin, err := engineCmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := engineCmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := engineCmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(stdout)
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("the engine stopped before holding the store: %v", err)
			}
			if line == "HOLDING\n" {
				break
			}
		}
		read := a.run(t, readerUser, "read", path)
		if read.Err != "" || read.Revision == 0 {
			t.Errorf("reading beside the engine: %+v", read)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if got := fileOwner(t, path+suffix); got != a.creds[engineUser].Uid {
				t.Errorf("%s is owned by uid %d, not the engine's %d", suffix, got, a.creds[engineUser].Uid)
			}
		}
		stdin.Close()
		rest, _ := io.ReadAll(lines)
		if err := engineCmd.Wait(); err != nil {
			t.Fatalf("engine: %v", err)
		}
		if w := parseResult(t, rest); w.Err != "" || w.Revision <= read.Revision {
			t.Errorf("the engine's write after the read: %+v (read revision %d)", w, read.Revision)
		}
	})
}

func TestAStoreInAReadOnlyFolderIsServedOrRefusedSayingWhatToDo(t *testing.T) {
	a := twoUsers(t)
	dir := sharedDir(t, 0o755)
	if err := os.Chown(dir, int(a.creds[engineUser].Uid), int(a.creds[engineUser].Gid)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "engine.db")
	if c := a.run(t, engineUser, "create", path); c.Err != "" {
		t.Fatalf("creating the store: %s", c.Err)
	}
	got := a.run(t, readerUser, "read", path)
	for _, want := range []string{"read-only folder", "start the engine", "immutable=1"} {
		if !strings.Contains(got.Err, want) {
			t.Errorf("refusal %q does not say %q", got.Err, want)
		}
	}
	if got := a.run(t, readerUser, "read", "file:"+path+"?immutable=1"); got.Err != "" || got.Revision == 0 {
		t.Errorf("reading immutable: %+v", got)
	}
}
