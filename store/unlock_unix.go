//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"os"
	"syscall"
)

// releaseLock drops bbolt's flock on f. When bbolt panics inside Open after mapping the
// file, the mapping keeps the open file alive, so closing f alone would not unlock it.
func releaseLock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
