//go:build unix

package store

import (
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

type owned struct {
	// foreign: the store's file belongs to another user than flowsnap's,
	// and flowsnap is not root (as root, SQLite gives the files it creates
	// to the store's owner).
	foreign     bool
	uid, owner  int
	dirWritable bool
}

func ownership(path string) owned {
	o := owned{uid: os.Geteuid(), owner: -1, dirWritable: unix.Access(filepath.Dir(path), unix.W_OK) == nil}
	if fi, err := os.Stat(path); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			o.owner = int(st.Uid)
		}
	}
	o.foreign = o.uid != 0 && o.owner >= 0 && o.owner != o.uid
	return o
}
