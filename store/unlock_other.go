//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import "os"

// releaseLock is a no-op where bbolt does not lock with flock.
func releaseLock(f *os.File) {}
