package store

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// A SQLite store in WAL mode is read through two files beside it, -wal and
// -shm, which the first connection to open the store creates when they are
// missing, owned by its own user. A reader that opens the store before the
// engine does, as another user, would leave the engine a WAL it may not
// write ("attempt to write a readonly database"); one in a folder it may not
// write cannot create them at all. checkReadOnlyOpen decides, before a read-only
// open, whether opening may create them (docs/contract.md#sqlite-ownership).

// walFilesExist reports whether both the -wal and -shm files of the store
// at path exist. It only stats them: SQLite holds POSIX advisory locks on
// the store's files, and closing any descriptor of a file drops every such
// lock the process holds on it (see walStamp).
func walFilesExist(path string) bool {
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err != nil {
			return false
		}
	}
	return true
}

// inWALMode reports whether the store's header says WAL mode: its read and
// write versions (bytes 18 and 19) are 2. It opens the store's file, so it
// is called only when no connection of this process can hold a lock on it:
// before the first, and when its -wal and -shm files do not exist, which a
// connection in WAL mode would have created.
func inWALMode(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return false, nil // empty or shorter than a header: no store yet
	}
	return hdr[18] == 2 && hdr[19] == 2, nil
}

// immutable reports whether a SQLite file: URI asks for immutable=1, which
// tells SQLite that nobody writes the store: it then reads the file alone,
// with no -wal or -shm, and never sees later writes.
func immutable(dsn string) bool {
	if !strings.HasPrefix(dsn, "file:") {
		return false
	}
	_, query, _ := strings.Cut(dsn, "?")
	v, _ := url.ParseQuery(query)
	return v.Get("immutable") == "1"
}

// checkReadOnlyOpen refuses, before a read-only open of the SQLite store at
// path, an open that would create its -wal and -shm files where they must
// not be created: in a folder flowsnap may not write (SQLite would fail
// with a message about a read-only database), or owned by flowsnap's user
// when the store belongs to another, whose engine could then not write it.
// A store nobody writes can be opened anyway as file:PATH?immutable=1.
// foreign reports that the store belongs to another user, so that reads
// can go on refusing to create the files should they disappear.
func checkReadOnlyOpen(dsn, path, where string) (foreign bool, err error) {
	if immutable(dsn) {
		return false, nil
	}
	own := ownership(path)
	if walFilesExist(path) {
		return own.foreign, nil
	}
	if !own.foreign && own.dirWritable {
		return false, nil
	}
	wal, err := inWALMode(path)
	if err != nil {
		return false, fmt.Errorf("opening %s: the file cannot be read: %w", where, err)
	}
	if !wal {
		// In rollback-journal mode a reader creates no file.
		return false, nil
	}
	hint := "start the engine (which creates them) before flowsnap, or, for a store nobody writes, serve it as file:" + path + "?immutable=1"
	if !own.dirWritable {
		return false, fmt.Errorf("opening %s: the store is in WAL mode and its -wal and -shm files do not exist, and flowsnap may not create them in the read-only folder %s: %s", where, filepath.Dir(path), hint)
	}
	return false, fmt.Errorf("opening %s: the store is in WAL mode and its -wal and -shm files do not exist; creating them would leave them owned by flowsnap's user (uid %d), and the engine, running as the store's owner (uid %d), could then not write the store: %s, or run flowsnap as uid %d", where, own.uid, own.owner, hint, own.owner)
}
